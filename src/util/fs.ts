// Files written so that a reader never sees half of one: the certificates, the CNI configuration
// and binary, the node file the plugin reads.
import { chmodSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes a file atomically with the given mode: a temporary file beside it (same filesystem, a
 * dot name the CNI runtimes and our watches skip), then a rename over the target.
 */
export function writeAtomic(path: string, data: string | Buffer, mode: number): void {
  const tmp = join(dirname(path), `.${basename(path)}.tmp-${process.pid}`);
  try {
    writeFileSync(tmp, data, { mode });
    chmodSync(tmp, mode);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
