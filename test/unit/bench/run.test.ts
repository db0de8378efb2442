// `npm run bench` stopped by a signal (bench/run.ts): what the benches started ends with it, and
// their temporary files go. The memory bench's first child, a bare `node` idling as its baseline,
// is stopped only in a `finally` block, which a signal to the runner alone skips; it used to idle
// on, orphaned, and the bench's directory under TMPDIR stayed.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pidtree from 'pidtree';
import { describe, expect, it } from 'vitest';
import { until } from '../../helpers/wait.js';

const cmdline = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
};

describe('the bench runner, stopped by SIGTERM', () => {
  it('ends the processes the benches started, removes their files, and exits 143', async () => {
    // The runner's TMPDIR is a directory of the test's, to see what the stopped bench leaves.
    const tmp = mkdtempSync(join(tmpdir(), 'bench-run-test-'));
    const runner = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', 'memory'], {
      env: { ...process.env, TMPDIR: tmp },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    runner.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => runner.once('exit', resolve));
    let baseline: number | undefined;
    try {
      baseline = await until(
        'the memory bench to start its baseline',
        async () =>
          (await pidtree(runner.pid ?? 0).catch(() => [] as number[])).find((pid) =>
            cmdline(pid).includes('setInterval'),
          ),
        30_000,
      );
      runner.kill('SIGTERM');
      expect(await exited).toBe(143);
      expect(stderr).toContain('bench: SIGTERM, ending the processes it started');
      // Gone, not left idling (the kernel reaps it once init adopts it).
      await until('the baseline to end', () => cmdline(baseline ?? 0) === '' || undefined, 5000);
      // The memory bench had made its directory (its baseline runs from there on): nothing of the
      // benches' stays. tsx keeps its compile cache there (tsx-<uid>), as it does on any run.
      expect(readdirSync(tmp).filter((f) => !f.startsWith('tsx-'))).toEqual([]);
    } finally {
      if (runner.exitCode === null) runner.kill('SIGKILL');
      // A runner that failed to end it must not leave it behind either.
      if (baseline !== undefined && cmdline(baseline).includes('setInterval'))
        process.kill(baseline, 'SIGKILL');
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 60_000);
});
