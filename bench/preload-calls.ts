// What the preload library adds to the calls event loops make often (`npm run bench preload-calls`,
// #99), on this machine: epoll_ctl(MOD) on a connected socket, socket() and close(), and a whole
// connection outside the selection as an event loop makes it (added to epoll before connect()).
// bench/preload/calls.c runs them without the library and under it with a selection that excludes
// the destination, interleaved over rounds; each row is the median of the rounds against the
// median without. No SMC is needed: an excluded connection never opens AF_SMC.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { median, type BenchRow } from './report.js';

const ROUNDS = Number(process.env.ERDMA_SMCR_BENCH_PRELOAD_ROUNDS ?? 5);
const N = Number(process.env.ERDMA_SMCR_BENCH_PRELOAD_N ?? 200_000);
const LIB = resolve('native/build/libsmc-preload.so');

const CASES: Readonly<Record<string, string>> = {
  epoll_ctl_mod: 'epoll_ctl(MOD) on a connected socket, ns a call',
  socket_close: 'socket() then close(), ns a pair',
  excluded_connection:
    'an excluded connection: socket, epoll ADD before connect(), connect to 127.0.0.1, close; ns each',
};

function parse(out: string): Record<string, number> {
  const r: Record<string, number> = {};
  for (const line of out.trim().split('\n')) {
    const [k, v] = line.split(' ');
    if (k && v) r[k] = Number(v);
  }
  return r;
}

export async function benchPreloadCalls(): Promise<BenchRow[]> {
  execFileSync('make', ['-s', '-C', 'native', 'build/libsmc-preload.so'], { stdio: 'inherit' });
  const dir = mkdtempSync(join(tmpdir(), 'preload-calls-'));
  try {
    const bin = join(dir, 'calls');
    execFileSync('cc', ['-O2', '-o', bin, 'bench/preload/calls.c']);
    const run = (env: NodeJS.ProcessEnv): Record<string, number> =>
      parse(execFileSync(bin, [String(N)], { env: { ...process.env, ...env }, encoding: 'utf8' }));
    const without: Record<string, number>[] = [];
    const under: Record<string, number>[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      without.push(run({}));
      under.push(run({ LD_PRELOAD: LIB, ERDMA_SMCR_SELECT: 'nets=10.0.0.0/8;connect=*;listen=1' }));
    }
    const rows: BenchRow[] = [];
    for (const [k, what] of Object.entries(CASES)) {
      const base = median(without.map((r) => r[k]!));
      const lib = median(under.map((r) => r[k]!));
      rows.push({
        bench: 'preload-calls',
        case: `${what}: under the library, selection excluding it (× without)`,
        value: lib,
        unit: 'ns',
        // A time: > 1 is slower. The report's ratio column reads "× the baseline".
        ratio: lib / base,
        extra: `without ${base.toFixed(0)} ns; ${ROUNDS} rounds of ${k === 'excluded_connection' ? N / 20 : N}`,
      });
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
