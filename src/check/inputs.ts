// Reads the objects `check` works on: files, directories (recursively) and stdin (./walk.ts finds
// the files, ./parse.ts reads each), file by file.
import { closeSync, openSync, readFileSync, statSync } from 'node:fs';
import { readBounded } from '../util/read.js';
import { expandPaths, MAX_INPUT_BYTES, unreadable, type InputError } from './walk.js';
import {
  documentsBefore,
  helmTemplateHint,
  notObjectError,
  parseError,
  parseManifests,
  type NotObject,
  type SourcedObject,
} from './parse.js';

export { expandPaths, MAX_INPUT_BYTES, type InputError, type SpecialFile } from './walk.js';
export {
  helmTemplateHint,
  LIST_LIMITS,
  parseManifests,
  type NotObject,
  type SourcedObject,
} from './parse.js';

export interface Inputs {
  readonly objects: SourcedObject[];
  readonly errors: InputError[];
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
