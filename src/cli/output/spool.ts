// Finished output text that must wait for the end of a run (a total in a header, results grouped
// by namespace): kept in memory up to a limit, then in a temporary file, so `check`'s memory stays
// flat however large the input. The file is unlinked as soon as it is opened: it lives only as the
// open descriptor, so nothing is left behind however the process ends.
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';

/** Bytes kept in memory before the spool moves to a file. */
export const SPOOL_MEMORY_BYTES = 1 << 20;
const CHUNK = 256 << 10;

export class Spool {
  private mem: Buffer = Buffer.alloc(64 << 10);
  private fd: number | undefined;
  private readBuf: Buffer | undefined;
  /** Bytes appended so far. */
  size = 0;

  constructor(private readonly memoryLimit = SPOOL_MEMORY_BYTES) {}

  /** Appends text; returns where it starts (for `copy`). No Buffer per call: the text is encoded in place. */
  append(text: string): number {
    const length = Buffer.byteLength(text, 'utf8');
    const at = this.size;
    if (this.fd === undefined && at + length > this.memoryLimit) this.spill();
    if (this.fd !== undefined) {
      if (writeSync(this.fd, text, at, 'utf8') !== length)
        throw new Error('short write to the spool file');
    } else {
      if (at + length > this.mem.length) {
        const grown = Buffer.alloc(
          Math.min(this.memoryLimit, Math.max(this.mem.length * 2, at + length)),
        );
        this.mem.copy(grown, 0, 0, at);
        this.mem = grown;
      }
      this.mem.write(text, at, 'utf8');
    }
    this.size += length;
    return at;
  }

  /** Writes the text in [from, from + length) to `out`, a chunk at a time. */
  copy(out: (text: string) => void, from = 0, length = this.size - from): void {
    if (this.fd === undefined) {
      out(this.mem.toString('utf8', from, from + length));
      return;
    }
    const decoder = new StringDecoder('utf8'); // a character may straddle two chunks
    const buf = (this.readBuf ??= Buffer.alloc(CHUNK));
    for (let done = 0; done < length;) {
      const n = readSync(this.fd, buf, 0, Math.min(buf.length, length - done), from + done);
      if (n === 0) throw new Error(`spool file ended at ${from + done} of ${from + length}`);
      out(decoder.write(buf.subarray(0, n)));
      done += n;
    }
    out(decoder.end());
  }

  /** Whether the text lives in a file now (for tests). */
  get spilled(): boolean {
    return this.fd !== undefined;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.mem = Buffer.alloc(0);
  }

  private spill(): void {
    const dir = mkdtempSync(join(tmpdir(), 'erdma-smcr-check-'));
    try {
      this.fd = openSync(join(dir, 'spool'), 'w+', 0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    writeSync(this.fd, this.mem, 0, this.size, 0);
    this.mem = Buffer.alloc(0);
  }
}
