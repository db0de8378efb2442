// Files written so that a reader never sees half of one: the certificates, the CNI configuration
// and binary, the node file the plugin reads.
import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes a file atomically with the given mode: a temporary file beside it (same filesystem, a
 * dot name the CNI runtimes and our watches skip), then a rename over the target.
 */
export function writeAtomic(path: string, data: string | Buffer, mode: number): void {
  replaceAtomic(path, mode, (tmp) => writeFileSync(tmp, data, { mode }));
}

/**
 * Copies `source` over `path` atomically, as writeAtomic writes. The kernel copies the bytes: the
 * process never holds the file (the CNI plugin is over a megabyte, and an idle agent keeps a
 * buffer that size until a collection finds it, #43).
 */
export function copyAtomic(source: string, path: string, mode: number): void {
  replaceAtomic(path, mode, (tmp) => copyFileSync(source, tmp));
}

function replaceAtomic(path: string, mode: number, write: (tmp: string) => void): void {
  const tmp = join(dirname(path), `.${basename(path)}.tmp-${process.pid}`);
  try {
    write(tmp);
    chmodSync(tmp, mode);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** The SHA-256 of a file in hex, read 64 KiB at a time (the file is never held whole). */
export function sha256File(path: string): string {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(64 << 10);
  const fd = openSync(path, 'r');
  try {
    for (let n; (n = readSync(fd, chunk, 0, chunk.length, null)) > 0;)
      hash.update(chunk.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}
