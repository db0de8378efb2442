// Which files `check` reads: paths and directories walked as `kubectl apply -R -f` walks them,
// bounded against what would block or never end; a file it cannot read is an input error.
import { readdirSync, realpathSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { ErrorCode } from '../errors.js';
import { errnoReason } from '../util/errno.js';

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

/** Directories never read: a repository's own metadata and its dependencies. */
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

/** The largest file `check` reads (a manifest tree's largest files are well under 1 MiB). */
export const MAX_INPUT_BYTES = 64 << 20;

export function unreadable(path: string, err: unknown): InputError {
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
