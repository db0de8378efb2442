// Reading a stream to its end with a bound: stdin, and a FIFO named as an input
// (`check -f <(kustomize build …)`), are read the same way and refused past the same limit.
import { readSync } from 'node:fs';

/** Reads fd to EOF; throws `more than N MiB on WHAT` past `limit` bytes, never an out-of-memory abort. */
export function readBounded(fd: number, limit: number, what: string): string {
  const chunks: Buffer[] = [];
  let total = 0;
  const buf = Buffer.allocUnsafe(1 << 20);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') continue;
      if ((err as NodeJS.ErrnoException).code === 'EOF') break;
      throw err;
    }
    if (n === 0) break;
    total += n;
    if (total > limit) throw new Error(`more than ${limit >> 20} MiB on ${what}`);
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  return Buffer.concat(chunks).toString('utf8');
}
