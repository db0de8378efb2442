// Drives the CLI in-process with captured streams.
import { main } from '../../src/cli/main.js';
import type { CliIO } from '../../src/util/io.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCli(
  args: string[],
  opts: { stdin?: string; tty?: boolean; env?: Record<string, string> } = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    out: (t) => {
      stdout += t;
    },
    err: (t) => {
      stderr += t;
    },
    stdin: () => opts.stdin ?? '',
    // Input is on stdin when the test gives some, as with `cat pod.yaml | erdma-smcr check`.
    stdinHasInput: () => opts.stdin !== undefined,
    stdoutIsTTY: opts.tty ?? false,
    env: opts.env ?? {},
  };
  const code = await main(['node', 'erdma-smcr', ...args], io);
  return { code, stdout, stderr };
}
