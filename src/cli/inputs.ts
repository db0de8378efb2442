// Reads the objects `check` works on: files, directories (recursively) and stdin; multi-document
// YAML, JSON and `kind: List` all flatten to one object per entry, each with its file and line.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../errors.js';
import { isObject } from '../policy/locate.js';
import type { JsonObject } from '../policy/types.js';
import { parseYamlDocuments } from '../yaml.js';

export interface SourcedObject {
  /** `file:line` (or `file:line#items[i]` for an entry of a List). */
  readonly source: string;
  readonly object: JsonObject;
}

const MANIFEST_EXT = /\.(ya?ml|json)$/i;

/** Expands directories recursively into their manifest files, sorted for stable output. */
export function expandPaths(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    if (p === '-') {
      out.push(p);
      continue;
    }
    let st;
    try {
      st = statSync(p);
    } catch (err) {
      throw new AppError('INPUT_UNREADABLE', `cannot read ${p}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!st.isDirectory()) {
      out.push(p);
      continue;
    }
    const entries = readdirSync(p, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    const children = entries
      .filter((e) => e.isDirectory() || (e.isFile() && MANIFEST_EXT.test(e.name)))
      .filter((e) => !e.name.startsWith('.'))
      .map((e) => join(p, e.name));
    out.push(...expandPaths(children));
  }
  return out;
}

function flatten(doc: unknown, source: string): SourcedObject[] {
  if (!isObject(doc)) return [];
  const kind = typeof doc.kind === 'string' ? doc.kind : '';
  if (kind.endsWith('List') && Array.isArray(doc.items)) {
    return doc.items.flatMap((item, i) => flatten(item, `${source}#items[${i}]`));
  }
  return [{ source, object: doc }];
}

/** Parses YAML or JSON text into sourced objects; a syntax error names the file and line. */
export function parseManifests(text: string, name: string): SourcedObject[] {
  return parseYamlDocuments(text, name).flatMap((d) => flatten(d.value, `${name}:${d.line}`));
}

function readSource(path: string, stdin: () => string): string {
  if (path === '-') return stdin();
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new AppError('INPUT_UNREADABLE', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** Reads every input; `stdin` is called at most once, for `-`. */
export function readInputs(paths: readonly string[], stdin: () => string): SourcedObject[] {
  return expandPaths(paths).flatMap((p) => parseManifests(readSource(p, stdin), p === '-' ? '<stdin>' : p));
}
