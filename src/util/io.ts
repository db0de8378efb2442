// The process's streams behind a small interface, so commands can be driven in tests.
import { readFileSync } from 'node:fs';
import { isatty } from 'node:tty';
import sonicBoom, { type SonicBoom } from 'sonic-boom';

export interface CliIO {
  out(text: string): void;
  err(text: string): void;
  /** Reads all of stdin (called at most once). */
  stdin(): string;
  readonly stdoutIsTTY: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/**
 * Standard output written synchronously, waiting for a slow reader. `process.stdout` on a pipe
 * (a CI runner, `| jq`) queues in memory whatever the reader has not taken yet, and `check` writes
 * from a loop that never yields: 100 MiB of report would sit in memory. sonic-boom's synchronous
 * mode writes each chunk before returning (retrying when the pipe is full), so memory stays flat.
 * `process.stdout` is never touched, which would make a pipe non-blocking.
 */
let stdout: SonicBoom | undefined;

export function processIO(): CliIO {
  return {
    out: (t) => (stdout ??= new sonicBoom.SonicBoom({ fd: 1, sync: true })).write(t),
    err: (t) => process.stderr.write(t),
    stdin: () => readFileSync(0, 'utf8'),
    stdoutIsTTY: isatty(1),
    env: process.env,
  };
}
