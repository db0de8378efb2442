// The process's streams behind a small interface, so commands can be driven in tests.
import { fstatSync } from 'node:fs';
import { createRequire } from 'node:module';
import sonicBoom, { type SonicBoom } from 'sonic-boom';
import { readBounded } from './read.js';

export interface CliIO {
  out(text: string): void;
  err(text: string): void;
  /** Reads all of stdin (called at most once); throws past STDIN_LIMIT bytes. */
  stdin(): string;
  /** Whether stdin is a pipe or a file: something was given on it (`cat pod.yaml | erdma-smcr check`). */
  stdinHasInput(): boolean;
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
/** Set once the reader of standard output has gone (`| head`): later output is dropped. */
let stdoutGone = false;

/**
 * Writes to standard output. A reader that stops early (`erdma-smcr check -f dir | head`) closes the
 * pipe; like a Unix filter we stop writing then, quietly, and the command still finishes and exits
 * with its own code, so a gate under `set -o pipefail` keeps its verdict.
 */
function writeOut(text: string): void {
  if (stdoutGone) return;
  try {
    (stdout ??= new sonicBoom.SonicBoom({ fd: 1, sync: true })).write(text);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPIPE') throw err;
    stdoutGone = true;
  }
}

/** The most read from stdin: more is refused with a message, never an out-of-memory abort. */
export const STDIN_LIMIT = 64 << 20;

function readStdin(): string {
  return readBounded(0, STDIN_LIMIT, 'stdin');
}

function stdinHasInput(): boolean {
  try {
    const st = fstatSync(0);
    return st.isFIFO() || (st.isFile() && st.size > 0);
  } catch {
    return false;
  }
}

/**
 * Whether standard output is a terminal. A pipe or a file (a CI runner, `| jq`, `> report`) is
 * answered from fstat; only a character device asks node:tty, which loads net and the stream
 * modules: 2–3 ms of a `check`'s start-up that nothing else in it needs (#43).
 */
function stdoutIsTerminal(): boolean {
  try {
    if (!fstatSync(1).isCharacterDevice()) return false;
  } catch {
    return false;
  }
  return (createRequire(import.meta.url)('node:tty') as typeof import('node:tty')).isatty(1);
}

export function processIO(): CliIO {
  return {
    out: writeOut,
    err: (t) => process.stderr.write(t),
    stdin: readStdin,
    stdinHasInput,
    get stdoutIsTTY() {
      return stdoutIsTerminal();
    },
    env: process.env,
  };
}
