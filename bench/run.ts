// `npm run bench`: runs every benchmark (or those named as arguments) and prints one Markdown table.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pidtree from 'pidtree';
import { benchApps } from './apps.js';
import { benchCheck } from './check.js';
import { benchCni } from './cni.js';
import { benchNodePods } from './memory/agent-pods.js';
import { benchPodsStart } from './pods-start.js';
import { benchPreloadCalls } from './preload-calls.js';
import { benchMemory } from './memory/daemons.js';
import { benchScale } from './scale.js';
import { benchSmc } from './smc.js';
import { benchSmcCost } from './smc-cost.js';
import { benchSmcGain } from './smc-gain.js';
import { table, type BenchRow } from './report.js';
import { benchWebhook } from './webhook.js';

const BENCHES: Record<string, () => Promise<BenchRow[]>> = {
  check: benchCheck,
  webhook: benchWebhook,
  cni: benchCni,
  smc: benchSmc,
  'smc-cost': benchSmcCost,
  'smc-gain': benchSmcGain,
  apps: benchApps,
  'preload-calls': benchPreloadCalls,
  memory: benchMemory,
  pods: benchNodePods,
  'pods-start': benchPodsStart,
  scale: benchScale,
};

/** How long the processes a stopped bench started have to end on SIGTERM before SIGKILL. */
const GRACE_MS = 2000;

/**
 * The benches' temporary files (their trees, certificates, a control plane's data) go to one
 * directory of the run's, under TMPDIR: `os.tmpdir()` reads TMPDIR on each call, and so do the
 * processes they start. Each bench removes its own in a `finally` block; the runner removes the
 * whole on its way out, so that a stopped bench leaves nothing behind either.
 */
const scratch = mkdtempSync(join(tmpdir(), 'erdma-bench-'));
process.env.TMPDIR = scratch;
const removeScratch = (): void => rmSync(scratch, { recursive: true, force: true });

/**
 * Stopped by a signal (Ctrl-C, or `kill` of this process alone), the runner ends what the benches
 * started (servers, daemons, their baselines, a control plane's components) before it exits, then
 * removes their temporary files: the benches stop them in `finally` blocks, which a signal skips,
 * and they would idle on.
 */
function endDescendantsOn(signal: NodeJS.Signals, code: number): void {
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}, ending the processes it started\n`);
    void (async () => {
      const alive = (pid: number): boolean => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      const pids = await pidtree(process.pid).catch(() => [] as number[]);
      for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGTERM');
      for (let waited = 0; waited < GRACE_MS && pids.some(alive); waited += 100) await sleep(100);
      for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
      removeScratch();
      process.exit(code);
    })();
  });
}
endDescendantsOn('SIGINT', 130);
endDescendantsOn('SIGTERM', 143);

const wanted = process.argv.slice(2);
const rows: BenchRow[] = [];
try {
  for (const [name, run] of Object.entries(BENCHES)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    process.stderr.write(`bench ${name}...\n`);
    rows.push(...(await run()));
  }
} finally {
  removeScratch();
}
console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}\n`);
console.log(table(rows));
