// The process's streams behind a small interface, so commands can be driven in tests.
import { readFileSync } from 'node:fs';

export interface CliIO {
  out(text: string): void;
  err(text: string): void;
  /** Reads all of stdin (called at most once). */
  stdin(): string;
  readonly stdoutIsTTY: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export function processIO(): CliIO {
  return {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    stdin: () => readFileSync(0, 'utf8'),
    stdoutIsTTY: process.stdout.isTTY === true,
    env: process.env,
  };
}
