// Reads the objects `check` works on: files, directories (recursively) and stdin; multi-document
// YAML, JSON and `kind: List` all flatten to one object per entry, each with its file and line.
import {
  closeSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { PROFILE_KIND } from '../cluster/profile.js';
import type { ErrorCode } from '../errors.js';
import { isObject } from '../util/json.js';
import type { JsonObject } from '../policy/types.js';
import { readBounded } from '../util/read.js';
import { parseYamlDocuments } from '../util/yaml.js';
import { errnoReason } from '../util/errno.js';

export interface SourcedObject {
  /** `file:line` (or `file:line#items[i]` for an entry of a List). */
  readonly source: string;
  readonly object: JsonObject;
}

const MANIFEST_EXT = /\.(ya?ml|json)$/i;

/** An input that could not be read or parsed: reported in every output format, never fatal to the others. */
export interface InputError {
  /** `file` or `file:line`. */
  readonly source: string;
  readonly code: Extract<
    ErrorCode,
    'INPUT_UNREADABLE' | 'INPUT_PARSE' | 'INPUT_NOT_OBJECT' | 'NOTHING_TO_CHECK'
  >;
  readonly message: string;
}

export interface Inputs {
  readonly objects: SourcedObject[];
  readonly errors: InputError[];
}

/** Directories never read: a repository's own metadata and its dependencies. */
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

/** The largest file `check` reads (a manifest tree's largest files are well under 1 MiB). */
export const MAX_INPUT_BYTES = 64 << 20;

function unreadable(path: string, err: unknown): InputError {
  const reason = errnoReason(err);
  return { source: path, code: 'INPUT_UNREADABLE', message: `cannot read ${path}: ${reason}` };
}

/** Takes a file found at `p` as an input, or says why not. */
function fileInput(p: string, st: Stats, top: boolean, out: string[], errors: InputError[]): void {
  // A FIFO named as an input (`-f <(kustomize build …)`, as kubectl reads it) is read as stdin is
  // (inputReader); one found in a directory would block, and a device (/dev/zero) never ends.
  if (top && st.isFIFO()) out.push(p);
  else if (!st.isFile())
    errors.push({
      source: p,
      code: 'INPUT_UNREADABLE',
      message: `cannot read ${p}: not a regular file or a named pipe (a device or socket); pass its content on stdin with -`,
    });
  else if (st.size > MAX_INPUT_BYTES)
    errors.push({
      source: p,
      code: 'INPUT_UNREADABLE',
      message: `cannot read ${p}: ${st.size} bytes, over the ${MAX_INPUT_BYTES >> 20} MiB a manifest may have`,
    });
  else out.push(p);
}

/**
 * Expands directories recursively into their manifest files, sorted for stable output. Reads what
 * `kubectl apply -R -f` reads: files ending in .yaml, .yml or .json, in dot-directories and
 * dot-files too, symlinked files followed. Symlinked directories are followed as well (kubectl
 * does not descend into them; checking more is the safe side), each real directory once, so a
 * cycle ends. `.git` is skipped. Named pipes, sockets and devices inside a directory are not
 * read (a pipe would block, a device never ends): each goes into `specials` for the run's notices.
 */
/** A file met in a directory that is not a regular file: never read, told in the run's notices. */
export interface SpecialFile {
  readonly path: string;
  readonly kind: 'named pipe' | 'socket' | 'character device' | 'block device';
}

const specialKind = (st: Stats): SpecialFile['kind'] | undefined =>
  st.isFIFO()
    ? 'named pipe'
    : st.isSocket()
      ? 'socket'
      : st.isCharacterDevice()
        ? 'character device'
        : st.isBlockDevice()
          ? 'block device'
          : undefined;

export function expandPaths(
  paths: readonly string[],
  errors: InputError[] = [],
  specials?: SpecialFile[],
): string[] {
  const out: string[] = [];
  const seenDirs = new Set<string>();
  const visit = (p: string, top: boolean): void => {
    let st;
    try {
      st = statSync(p);
    } catch (err) {
      // Inside a directory, only manifests are our business: a dangling README link is not.
      if (top || MANIFEST_EXT.test(p)) errors.push(unreadable(p, err));
      return;
    }
    if (!st.isDirectory()) {
      if (top || (st.isFile() && MANIFEST_EXT.test(p))) fileInput(p, st, top, out, errors);
      else {
        // A pipe would block the walk and a device never ends: not read, but named (#85 item 4).
        const kind = specialKind(st);
        if (kind) specials?.push({ path: p, kind });
      }
      return;
    }
    let real: string;
    let entries: string[];
    try {
      real = realpathSync(p);
      entries = readdirSync(p).sort();
    } catch (err) {
      errors.push(unreadable(p, err));
      return;
    }
    if (seenDirs.has(real)) return; // a symlink cycle, or a directory reached twice
    seenDirs.add(real);
    for (const name of entries) if (!SKIPPED_DIRS.has(name)) visit(join(p, name), false);
  };
  let stdinNamed = false;
  for (const p of paths) {
    if (p !== '-') visit(p, true);
    else if (!stdinNamed) {
      stdinNamed = true;
      out.push(p);
    } else
      errors.push({
        source: '-',
        code: 'INPUT_UNREADABLE',
        message: '- is named more than once: stdin is read once',
      });
  }
  return out;
}

/**
 * One object per entry. Items of a typed List (`DaemonSetList`, as `kubectl get ds -o json` prints)
 * carry no kind of their own: they take it, and the apiVersion, from the list, as kubectl reads them.
 */
/**
 * What one document may expand to. YAML aliases make a 760-byte document of nested Lists whose
 * items alias each other expand to gigabytes (a "billion laughs"): kubectl's YAML library refuses
 * excessive aliasing, and `check` refuses Lists nested deeper than this, or more objects than this.
 */
export const LIST_LIMITS = { depth: 2, objects: 100_000 } as const;

class TooLarge extends Error {}

function flatten(
  doc: unknown,
  source: string,
  notObjects: NotObject[],
  budget = { left: LIST_LIMITS.objects },
  depth = 0,
): SourcedObject[] {
  if (doc === null || doc === undefined) return []; // an empty document, as kubectl skips it
  if (--budget.left < 0)
    throw new TooLarge(`more than ${LIST_LIMITS.objects} objects in one document`);
  if (!isObject(doc)) {
    notObjects.push({ source, what: Array.isArray(doc) ? 'a list' : `a ${typeof doc}` });
    return [];
  }
  const kind = typeof doc.kind === 'string' ? doc.kind : '';
  if (kind.endsWith('List') && Array.isArray(doc.items)) {
    if (depth >= LIST_LIMITS.depth)
      throw new TooLarge(`Lists nested more than ${LIST_LIMITS.depth} deep`);
    const itemKind = kind === 'List' ? undefined : kind.slice(0, -'List'.length);
    return doc.items.flatMap((item, i) => {
      const typed =
        itemKind && isObject(item) && item.kind === undefined
          ? { apiVersion: doc.apiVersion, ...item, kind: itemKind }
          : item;
      return flatten(typed, `${source}#items[${i}]`, notObjects, budget, depth + 1);
    });
  }
  if (!isApiObject(doc, kind)) {
    notObjects.push({ source, what: 'a map without kind and apiVersion' });
    return [];
  }
  return [{ source, object: doc }];
}

/** Our ClusterProfile (src/cluster/profile.ts) needs no apiVersion; every API object does. */
function isApiObject(doc: JsonObject, kind: string): boolean {
  return kind !== '' && (typeof doc.apiVersion === 'string' || kind === PROFILE_KIND);
}

/** A document that is not a Kubernetes object: reported, never checked as one. */
export interface NotObject {
  readonly source: string;
  readonly what: string;
}

function notObjectError(n: NotObject): InputError {
  return {
    source: n.source,
    code: 'INPUT_NOT_OBJECT',
    message: `${n.source}: not a Kubernetes object (${n.what}): every document needs apiVersion and kind`,
  };
}

/**
 * Parses YAML or JSON text into sourced objects; a syntax error names the file and line.
 * Documents that are not Kubernetes objects go to `notObjects` (thrown away when not given).
 */
export function parseManifests(
  text: string,
  name: string,
  notObjects: NotObject[] = [],
): SourcedObject[] {
  return parseYamlDocuments(text, name, true).flatMap((d) => {
    const source = `${name}:${d.line}`;
    try {
      return flatten(d.value, source, notObjects);
    } catch (err) {
      if (!(err instanceof TooLarge)) throw err;
      throw new Error(`${source}: refused: ${err.message} (YAML aliases expanding without bound?)`);
    }
  });
}

/**
 * The documents before the one a syntax error is in (a YAML stream is parsed whole, so one bad
 * document would hide the verdicts on the good ones before it). Empty when none can be told apart.
 */
function documentsBefore(
  text: string,
  name: string,
  message: string,
  notObjects: NotObject[],
): SourcedObject[] {
  const line = Number(
    /^[^:]*:(\d+):/.exec(message.slice(name.length))?.[1] ??
      /:(\d+):\d+: invalid YAML/.exec(message)?.[1],
  );
  if (!Number.isFinite(line) || line < 2) return [];
  const lines = text.split('\n').slice(0, line - 1);
  let cut = -1;
  for (let i = lines.length - 1; i >= 0; i--)
    if (/^---(\s|$)/.test(lines[i]!)) {
      cut = i;
      break;
    }
  if (cut <= 0) return [];
  try {
    return parseManifests(lines.slice(0, cut).join('\n'), name, notObjects);
  } catch {
    return [];
  }
}

function parseError(name: string, err: unknown): InputError {
  const message = (err as Error).message;
  // The parser names the line (`file:LINE:COL: ...`); the entry's source carries it too.
  const line = message.startsWith(`${name}:`)
    ? /^\d+/.exec(message.slice(name.length + 1))?.[0]
    : undefined;
  return { source: line ? `${name}:${line}` : name, code: 'INPUT_PARSE', message };
}

/**
 * A chart's files are Helm templates, not manifests (#102): a parse error in one, or a document of
 * the chart that is no object (Chart.yaml, values.yaml), says so and how to check what it renders.
 * The chart is the nearest directory above the file holding a Chart.yaml; stdin has none, and is
 * told by the `{{` of a template action.
 */
export function helmTemplateHint(file: string, text: string): string {
  const chart = file === '-' ? undefined : chartRoot(file);
  if (chart !== undefined)
    return `; ${file} is part of the Helm chart ${chart}: check what it renders (helm template RELEASE ${chart} | erdma-smcr check -)`;
  if (/\{\{-?\s*[.$a-zA-Z/]/.test(text))
    return '; this looks like a Helm template ({{ … }}): check what it renders (helm template RELEASE CHART | erdma-smcr check -)';
  return '';
}

function chartRoot(file: string): string | undefined {
  let dir = dirname(file);
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, 'Chart.yaml'))) return dir;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

/**
 * Reads input files: regular ones each time they are asked for, a FIFO once (it can be read only
 * once, and the profile pass reads files twice), to its end, refused past MAX_INPUT_BYTES as
 * stdin is.
 */
export function inputReader(): (path: string) => string {
  const fifos = new Map<string, string>();
  return (p) => {
    const kept = fifos.get(p);
    if (kept !== undefined) return kept;
    if (!statSync(p).isFIFO()) return readFileSync(p, 'utf8');
    const fd = openSync(p, 'r');
    try {
      const text = readBounded(fd, MAX_INPUT_BYTES, p);
      fifos.set(p, text);
      return text;
    } finally {
      closeSync(fd);
    }
  };
}

/**
 * Visits the inputs file by file: `visit` gets each file's objects and may drop them, so memory
 * holds one file at a time whatever the size of the tree. `stdin` is called at most once, for
 * `-`; `only` skips files whose text does not match (cheap pre-filter, e.g. for ClusterProfile).
 * A file that cannot be read or parsed becomes an error entry; the rest are still visited.
 */
export function visitInputs(
  files: readonly string[],
  stdin: () => string,
  /** Called per file with its objects and the file as named (`-` for stdin). */
  visit: (objects: SourcedObject[], file: string) => void,
  errors: InputError[],
  only?: RegExp,
  read: (path: string) => string = (p) => readFileSync(p, 'utf8'),
  /** Given: documents that are not Kubernetes objects go here instead of becoming errors. */
  notObjectsSeen?: NotObject[],
): void {
  for (const p of files) {
    const name = p === '-' ? '<stdin>' : p;
    let text: string;
    try {
      text = p === '-' ? stdin() : read(p);
      if (text.length > MAX_INPUT_BYTES)
        throw new Error(`over the ${MAX_INPUT_BYTES >> 20} MiB a manifest may have`);
    } catch (err) {
      errors.push(unreadable(p, err));
      continue;
    }
    if (only && !only.test(text)) continue;
    let objects: SourcedObject[];
    const notObjects: NotObject[] = [];
    try {
      objects = parseManifests(text, name, notObjects);
    } catch (err) {
      const e = parseError(name, err);
      errors.push({ ...e, message: e.message + helmTemplateHint(p, text) });
      objects = documentsBefore(text, name, (err as Error).message, notObjects);
    }
    if (notObjectsSeen) notObjectsSeen.push(...notObjects);
    else {
      const hint = notObjects.length > 0 ? helmTemplateHint(p, text) : '';
      errors.push(
        ...notObjects.map((n) => ({
          ...notObjectError(n),
          message: notObjectError(n).message + hint,
        })),
      );
    }
    visit(objects, p);
  }
}

/** Reads every input into memory (tools and tests; `check` visits file by file instead). */
export function readInputs(paths: readonly string[], stdin: () => string): Inputs {
  const errors: InputError[] = [];
  const objects: SourcedObject[] = [];
  visitInputs(expandPaths(paths, errors), stdin, (objs) => objects.push(...objs), errors);
  return { objects, errors };
}
