// How `check` reads one file's text: multi-document YAML, JSON and `kind: List` flattened to one
// object per entry, each with its file and line; a syntax error names both, and a Helm template
// is told as one.
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { PROFILE_KIND } from '../cluster/profile.js';
import { isObject } from '../util/json.js';
import type { JsonObject } from '../policy/types.js';
import { parseYamlDocuments } from '../util/yaml.js';
import type { InputError } from './walk.js';

export interface SourcedObject {
  /** `file:line` (or `file:line#items[i]` for an entry of a List). */
  readonly source: string;
  readonly object: JsonObject;
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

export function notObjectError(n: NotObject): InputError {
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
export function documentsBefore(
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

export function parseError(name: string, err: unknown): InputError {
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
