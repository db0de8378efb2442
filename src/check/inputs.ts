// Reads the objects `check` works on: files, directories (recursively) and stdin; multi-document
// YAML, JSON and `kind: List` all flatten to one object per entry, each with its file and line.
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isObject } from '../util/json.js';
import type { JsonObject } from '../policy/types.js';
import { parseYamlDocuments } from '../util/yaml.js';

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
  readonly code: 'INPUT_UNREADABLE' | 'INPUT_PARSE';
  readonly message: string;
}

export interface Inputs {
  readonly objects: SourcedObject[];
  readonly errors: InputError[];
}

/** Directories never read: a repository's own metadata, as kubectl users expect. */
const SKIPPED_DIRS = new Set(['.git']);

function unreadable(path: string, err: unknown): InputError {
  const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  return { source: path, code: 'INPUT_UNREADABLE', message: `cannot read ${path}: ${reason}` };
}

/**
 * Expands directories recursively into their manifest files, sorted for stable output. Reads what
 * `kubectl apply -R -f` reads: files ending in .yaml, .yml or .json, in dot-directories and
 * dot-files too, symlinked files followed. Symlinked directories are followed as well (kubectl
 * does not descend into them; checking more is the safe side), each real directory once, so a
 * cycle ends. `.git` is skipped.
 */
export function expandPaths(paths: readonly string[], errors: InputError[] = []): string[] {
  const out: string[] = [];
  const seenDirs = new Set<string>();
  const visit = (p: string, top: boolean): void => {
    let st;
    try {
      st = statSync(p);
    } catch (err) {
      errors.push(unreadable(p, err));
      return;
    }
    if (!st.isDirectory()) {
      if (top || (st.isFile() && MANIFEST_EXT.test(p))) out.push(p);
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
  for (const p of paths) {
    if (p === '-') out.push(p);
    else visit(p, true);
  }
  return out;
}

/**
 * One object per entry. Items of a typed List (`DaemonSetList`, as `kubectl get ds -o json` prints)
 * carry no kind of their own: they take it, and the apiVersion, from the list, as kubectl reads them.
 */
function flatten(doc: unknown, source: string): SourcedObject[] {
  if (!isObject(doc)) return [];
  const kind = typeof doc.kind === 'string' ? doc.kind : '';
  if (kind.endsWith('List') && Array.isArray(doc.items)) {
    const itemKind = kind === 'List' ? undefined : kind.slice(0, -'List'.length);
    return doc.items.flatMap((item, i) => {
      const typed =
        itemKind && isObject(item) && item.kind === undefined
          ? { apiVersion: doc.apiVersion, ...item, kind: itemKind }
          : item;
      return flatten(typed, `${source}#items[${i}]`);
    });
  }
  return [{ source, object: doc }];
}

/** Parses YAML or JSON text into sourced objects; a syntax error names the file and line. */
export function parseManifests(text: string, name: string): SourcedObject[] {
  return parseYamlDocuments(text, name, true).flatMap((d) => flatten(d.value, `${name}:${d.line}`));
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
 * Visits the inputs file by file: `visit` gets each file's objects and may drop them, so memory
 * holds one file at a time whatever the size of the tree. `stdin` is called at most once, for
 * `-`; `only` skips files whose text does not match (cheap pre-filter, e.g. for ClusterProfile).
 * A file that cannot be read or parsed becomes an error entry; the rest are still visited.
 */
export function visitInputs(
  files: readonly string[],
  stdin: () => string,
  visit: (objects: SourcedObject[]) => void,
  errors: InputError[],
  only?: RegExp,
): void {
  for (const p of files) {
    const name = p === '-' ? '<stdin>' : p;
    let text: string;
    try {
      text = p === '-' ? stdin() : readFileSync(p, 'utf8');
    } catch (err) {
      errors.push(unreadable(p, err));
      continue;
    }
    if (only && !only.test(text)) continue;
    let objects: SourcedObject[];
    try {
      objects = parseManifests(text, name);
    } catch (err) {
      errors.push(parseError(name, err));
      continue;
    }
    visit(objects);
  }
}

/** Reads every input into memory (tools and tests; `check` visits file by file instead). */
export function readInputs(paths: readonly string[], stdin: () => string): Inputs {
  const errors: InputError[] = [];
  const objects: SourcedObject[] = [];
  visitInputs(expandPaths(paths, errors), stdin, (objs) => objects.push(...objs), errors);
  return { objects, errors };
}
