// Bare `node` processes that idle, for the benches' instruments (test/integration/bench): each
// started and known to run before it is measured, and all ended, and waited for, afterwards.
import { spawn, type ChildProcess } from 'node:child_process';

/**
 * `node` idling once it has started (it says so on stdout). `launch` gives the command line that
 * runs it (by default `node` itself; e.g. one that joins a cgroup first).
 */
export async function idlingNode(
  node: string,
  launch: (file: string, args: string[]) => [string, string[]] = (f, a) => [f, a],
): Promise<ChildProcess> {
  const [file, args] = launch(node, [
    '-e',
    'process.stdout.write("up"); setInterval(() => {}, 1000)',
  ]);
  const child = spawn(file, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH ?? '' },
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`${node} exited (${code}) before it idled`)));
  });
  return child;
}

/** Kills the processes and waits until each has exited (a cgroup or mount can then go). */
export async function killAll(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map((c) => {
      if (c.exitCode !== null || c.signalCode !== null) return undefined;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      return exited;
    }),
  );
}
