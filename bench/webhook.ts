// Benchmark: the webhook under load over TLS with keep-alive (autocannon), and at a fixed rate
// (h2load, bench/paced.ts), against a bare node:https server returning a fixed response (the
// ceiling for Node on this machine) and bare fastify, in the same run.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import {
  calibrate,
  h2loadVersion,
  pacedLoad,
  percentile,
  stalledRound,
  STALLED_SHARE,
  timingScript,
  type PacedLoad,
} from './paced.js';
import { podEnv } from './env.js';
import { median, type BenchRow } from './report.js';

const SNI = 'erdma-smcr-webhook.erdma-smcr.svc';
/** Seconds per measured load; every case is measured once per round, rounds interleave the cases. */
const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** Rounds at a fixed 500 req/s, each loading the ceiling, bare fastify and our server for PACED_SECONDS. */
const PACED_ROUNDS = Number(process.env.BENCH_PACED_ROUNDS ?? 8);
const PACED_SECONDS = Number(process.env.BENCH_PACED_SECONDS ?? 4);
const PACED_RATE = 500;
/** At most this many of a server's fixed-rate rounds are run again when h2load fell behind in them. */
const PACED_RERUNS = 4;
const CONNECTIONS = 8;

export interface Server {
  readonly child: ChildProcess;
  readonly port: number;
  /** What the server printed up to the line `pattern` matched. */
  readonly out: string;
}

/**
 * Starts a server (`args` to `node`, by default ours) and waits for `pattern` to give its port;
 * its environment is a pod's (bench/env.ts) with `env`.
 */
export async function startChild(
  args: string[],
  pattern: RegExp,
  env: Record<string, string> = {},
  node = process.execPath,
): Promise<Server> {
  const child = spawn(node, args, {
    stdio: ['ignore', 'pipe', 'ignore'],
    env: podEnv(env),
  });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 20_000);
    const onData = (d: Buffer): void => {
      out += d;
      const m = pattern.exec(out);
      if (!m) return;
      clearTimeout(timer);
      // From here on the output is drained and dropped, not kept.
      child.stdout?.off('data', onData).resume();
      resolve(Number(m[1]));
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return { child, port, out };
}

/** Stops a child and waits for it; at once if it has already exited (waiting would never end). */
export function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * CPU time (user + system, all threads) a process has used, in µs, from /proc/<pid>/stat. Its
 * unit is USER_HZ, which Linux fixes at 100 for user space on every architecture we run on.
 */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Jiffies the hypervisor gave to other guests (steal) and all jiffies, over every CPU, from /proc/stat. */
function cpuTicks(): { steal: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  return { steal: fields[7] ?? 0, total: fields.reduce((a, b) => a + b, 0) };
}

interface Load {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  /** Server CPU per answered request, µs: steadier than req/s on a shared machine. */
  readonly cpuPerRequest: number;
  /** Share of the machine's time stolen by the hypervisor during the load. */
  readonly steal: number;
}

export async function load(
  server: Server,
  path: string,
  body: string,
  ca: string,
  duration = DURATION,
): Promise<Load> {
  const pid = server.child.pid ?? 0;
  const before = cpuMicros(pid);
  const ticks = cpuTicks();
  const result = await autocannon({
    url: `https://127.0.0.1:${server.port}${path}`,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
    connections: CONNECTIONS,
    duration,
    servername: SNI,
    tlsOptions: { ca },
  } as autocannon.Options);
  const after = cpuTicks();
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    cpuPerRequest: (cpuMicros(pid) - before) / Math.max(1, result.requests.total),
    steal: (after.steal - ticks.steal) / Math.max(1, after.total - ticks.total),
  };
}

export function review(withAnnotation: boolean): string {
  const r = JSON.parse(
    readFileSync(
      'test/fixtures/apiserver-v1.37.2/admissionreview-pod-create-by-replicaset-controller.json',
      'utf8',
    ),
  );
  if (withAnnotation)
    r.request.object.metadata.annotations = {
      'network.alibabacloud.com/erdma-smcr': 'true',
      'smcr.erdma.io/wmem': '262144',
    };
  return JSON.stringify(r);
}

interface Case {
  readonly name: string;
  readonly server: Server;
  readonly body: string;
  readonly target?: string;
}

/** The median of per-round ratios of `runs` to `base` (req/s), and their spread. */
function roundRatios(
  runs: readonly Load[],
  base: readonly Load[],
): { median: number; spread: string } {
  const ratios = runs.map((r, i) => r.rps / base[i]!.rps);
  return {
    median: median(ratios),
    spread: `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`,
  };
}

/**
 * One row from a case's rounds: medians, and the ratio to the ceiling measured in the same round.
 * With `floor` (bare fastify's rounds) and a minimum, it also judges #25's target against it.
 */
function row(
  c: Case,
  runs: readonly Load[],
  ceiling?: readonly Load[],
  floor?: { runs: readonly Load[]; min: number },
): BenchRow {
  const ratios = ceiling ? runs.map((r, i) => r.rps / ceiling[i]!.rps) : [];
  const vsFloor = floor ? roundRatios(runs, floor.runs) : undefined;
  const cpu = median(runs.map((r) => r.cpuPerRequest));
  const errors = runs.reduce((n, r) => n + r.errors, 0);
  const notes = [
    ...(vsFloor
      ? [`${vsFloor.median.toFixed(2)}× bare fastify (${vsFloor.spread} over the rounds)`]
      : []),
    `p50 ${median(runs.map((r) => r.p50))} ms, p99 ${median(runs.map((r) => r.p99))} ms`,
    `server CPU ${Math.round(cpu)} µs/request`,
    ...(ratios.length > 1
      ? [
          `ratio ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} over ${runs.length} rounds`,
        ]
      : []),
    `steal ${(100 * median(runs.map((r) => r.steal))).toFixed(0)}%`,
    ...(errors ? [`${errors} errors`] : []),
  ];
  return {
    bench: 'webhook',
    case: c.name,
    value: median(runs.map((r) => r.rps)),
    unit: 'req/s',
    ratio: ceiling ? median(ratios) : 1,
    extra: notes.join(', '),
    ...(vsFloor && floor
      ? {
          target: `#25's target ≥ ${floor.min}× bare fastify: ${vsFloor.median >= floor.min ? 'met' : 'not met'}`,
        }
      : c.target
        ? { target: c.target }
        : {}),
  };
}

/** One server's fixed-rate rounds, and how many of them were run again. */
interface PacedSeries {
  readonly rounds: PacedLoad[];
  readonly reruns: number;
}

/**
 * Latency at a fixed rate (bench/paced.ts): each round loads every server for PACED_SECONDS,
 * starting from a different one, so that each sees the same mix of the machine's moods (a VM
 * whose vCPUs stall now and then, whatever runs on them). Each server gets its own timing script,
 * calibrated first, so that every one of them is loaded at PACED_RATE. A round in which h2load
 * fell behind its script (`stalledRound`) is run again, for every server alike: in such rounds
 * every server's p99 rose with the stall, the ceiling's too (a scratch run with each server's GC
 * traced found no collection behind them).
 */
async function pacedRuns(
  servers: readonly Server[],
  body: string,
  dir: string,
): Promise<PacedSeries[]> {
  const bodyFile = join(dir, 'review.json');
  writeFileSync(bodyFile, body);
  const scripts: string[] = [];
  for (const server of servers) {
    scripts.push(
      timingScript(
        dir,
        PACED_RATE,
        PACED_SECONDS,
        await calibrate(server.port, bodyFile, dir, PACED_RATE),
      ),
    );
  }
  const runs = servers.map((): PacedLoad[] => []);
  for (let round = 0; round < PACED_ROUNDS; round++) {
    for (let k = 0; k < servers.length; k++) {
      const i = (k + round) % servers.length;
      runs[i]!.push(
        await pacedLoad(servers[i]!.port, bodyFile, scripts[i]!, join(dir, 'paced.log')),
      );
    }
  }
  const series: PacedSeries[] = [];
  for (let i = 0; i < servers.length; i++) {
    const rounds = runs[i]!;
    let reruns = 0;
    for (
      let j = stalledRound(rounds.map((r) => r.rate));
      j >= 0 && reruns < PACED_RERUNS;
      j = stalledRound(rounds.map((r) => r.rate))
    ) {
      rounds[j] = await pacedLoad(servers[i]!.port, bodyFile, scripts[i]!, join(dir, 'paced.log'));
      reruns++;
    }
    series.push({ rounds, reruns });
  }
  return series;
}

/**
 * A fixed-rate row: percentiles of every response of every round pooled, and each round's p99.
 * The p99 ratios to the ceiling (and to bare fastify) are of the pooled p99s: a round's p99 rests
 * on its 1% slowest responses (20 at the defaults) and moves by ±30% from round to round; the
 * pooled one rests on PACED_ROUNDS times as many, spread over the same interleaved rounds. The
 * median of the per-round ratios is printed beside it.
 */
function pacedRow(
  name: string,
  series: PacedSeries,
  ceilingSeries?: PacedSeries,
  floorSeries?: PacedSeries,
  tool?: string,
): BenchRow {
  const runs = series.rounds;
  const ceiling = ceilingSeries?.rounds;
  const floor = floorSeries?.rounds;
  const pool = (rs: readonly PacedLoad[]): number[] =>
    rs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const pooled = pool(runs);
  const p99 = percentile(pooled, 0.99);
  const p99s = runs.map((r) => percentile(r.latencies, 0.99));
  const ms = (x: number): string => x.toFixed(2);
  const vs = (base: readonly PacedLoad[]): number => p99 / percentile(pool(base), 0.99);
  const perRound = (base: readonly PacedLoad[]): number =>
    median(p99s.map((p, i) => p / percentile(base[i]!.latencies, 0.99)));
  const errors = runs.reduce((n, r) => n + r.errors, 0);
  const notes = [
    `p50 ${ms(percentile(pooled, 0.5))} ms, p90 ${ms(percentile(pooled, 0.9))} ms over ${pooled.length} responses`,
    `p99 per round ${p99s.map(ms).join(' / ')} ms`,
    ...(ceiling
      ? [
          `p99 ${vs(ceiling).toFixed(2)}× the ceiling's (median of per-round ratios ${perRound(ceiling).toFixed(2)}×)`,
        ]
      : []),
    ...(floor ? [`${vs(floor).toFixed(2)}× bare fastify's`] : []),
    `${Math.round(median(runs.map((r) => r.rate)))} req/s reached`,
    ...(series.reruns > 0
      ? [
          `${series.reruns} round${series.reruns > 1 ? 's' : ''} run again (h2load fell behind: under ${STALLED_SHARE * 100}% of the median round's rate)`,
        ]
      : []),
    ...(errors ? [`${errors} errors`] : []),
    ...(tool ? [tool] : []),
  ];
  const ratio = ceiling && floor ? vs(ceiling) : undefined; // #25's target is for our review
  return {
    bench: 'webhook',
    case: name,
    value: p99,
    unit: 'ms p99',
    extra: notes.join(', '),
    ...(ratio !== undefined
      ? { target: `#25's target p99 ≤ 2× the ceiling's: ${ratio <= 2 ? 'met' : 'not met'}` }
      : {}),
  };
}

/**
 * µs per call of each function, measured in interleaved batches of ~20 ms: this machine's speed
 * drifts by up to 2× within a second, so each round times every function back to back, and a
 * function's ratio to the first is the median of its per-round ratios.
 */
function interleaved(fns: readonly (() => void)[], rounds = 41): { us: number; ratio: number }[] {
  const sizes = fns.map((fn) => {
    for (let n = 1; ; n *= 2) {
      const start = performance.now();
      for (let i = 0; i < n; i++) fn();
      if (performance.now() - start >= 20) return n;
    }
  });
  const times = fns.map((): number[] => []);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < fns.length; k++) {
      const j = (k + round) % fns.length;
      const start = performance.now();
      for (let i = 0; i < sizes[j]!; i++) fns[j]!();
      times[j]!.push(((performance.now() - start) * 1000) / sizes[j]!);
    }
  }
  return times.map((t) => ({ us: median(t), ratio: median(t.map((x, i) => x / times[0]![i]!)) }));
}

/** A module of the build (dist/, what `serve` runs), typed as its source: not through tsx's transform. */
async function built<T>(source: string): Promise<T> {
  return (await import(new URL(`../dist/${source}`, import.meta.url).href)) as T;
}

/**
 * The route's own work without HTTP, in this process: parse, decode, decide and serialise the
 * response, as the /mutate handler does, with the built modules. Steady where the loaded server is
 * noisy, so it is the figure to compare when the decision code changes. Baseline: JSON.parse of
 * the same body.
 */
async function inProcessRows(smcr: string, plain: string): Promise<BenchRow[]> {
  const { parseJsonBody } =
    await built<typeof import('../src/admission/app.js')>('admission/app.js');
  const { admit } =
    await built<typeof import('../src/admission/decision.js')>('admission/decision.js');
  const { decodeReview, encodeReviewJson } =
    await built<typeof import('../src/admission/review.js')>('admission/review.js');
  const { offlineView } =
    await built<typeof import('../src/cluster/offline.js')>('cluster/offline.js');
  const { defaultConfig } = await built<typeof import('../src/config/load.js')>('config/load.js');
  const config = defaultConfig();
  const view = offlineView(config).current();
  const route = (text: string) => (): void => {
    const decision = admit(decodeReview(parseJsonBody(text)), 'mutate', view, config.policy);
    Buffer.byteLength(encodeReviewJson(decision.response)); // fastify measures it for Content-Length, flattening it
  };
  const names = [
    `in process: JSON.parse of the ${(smcr.length / 1024).toFixed(1)} KiB review (baseline)`,
    'in process: SMC-R pod review (parse, decode, decide, serialise, measure)',
    'in process: pod without the annotation',
  ];
  const measured = interleaved([() => JSON.parse(smcr), route(smcr), route(plain)]);
  const limits = [undefined, 2.5, 1.3];
  return measured.map((m, i) => {
    const limit = limits[i];
    const target =
      limit === undefined
        ? undefined
        : `#25's target ≤ ${limit}×: ${m.ratio <= limit ? 'met' : 'not met'}`;
    return {
      bench: 'webhook',
      case: names[i]!,
      value: m.us,
      unit: 'µs/review',
      ratio: m.ratio,
      ...(target ? { target } : {}),
    };
  });
}

export async function benchWebhook(): Promise<BenchRow[]> {
  const h2load = await h2loadVersion(); // before anything starts: without it the run could not finish
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhook-'));
  // The certificates get a directory of their own: `serve` watches its certificate directory,
  // and h2load writes a line of its log (in `dir`) per response, which would wake our server
  // once per review (and reload the pair after every load) where a Secret volume never changes.
  const certs = join(dir, 'certs');
  const ours = await startChild(
    [
      'bin/erdma-smcr.js',
      'serve',
      '--port',
      '0',
      '--no-metrics',
      '--cert-dir',
      certs,
      '--log-level',
      process.env.BENCH_LOG_LEVEL ?? 'info',
    ],
    /listening on https:\/\/127\.0\.0\.1:(\d+)/,
  );
  const pair = [join(certs, 'tls.key'), join(certs, 'tls.crt')];
  const ceiling = await startChild(['bench/ceiling-server.mjs', ...pair], /port (\d+)/);
  const parsing = await startChild(['bench/ceiling-server.mjs', ...pair, '--parse'], /port (\d+)/);
  const floor = await startChild(['bench/fastify-floor.mjs', ...pair], /port (\d+)/);
  const ca = readFileSync(join(certs, 'ca.crt'), 'utf8');
  try {
    const smcr = review(true);
    const plain = review(false);
    const inProcess = await inProcessRows(smcr, plain);
    const cases: Case[] = [
      {
        name: `bare node:https, fixed response (ceiling), ${CONNECTIONS} connections`,
        server: ceiling,
        body: smcr,
      },
      {
        name: 'bare node:https that JSON.parses the body, fixed response',
        server: parsing,
        body: smcr,
      },
      {
        name: 'bare fastify (our transport options, JSON body parsed), fixed response',
        server: floor,
        body: smcr,
      },
      { name: 'SMC-R pod review (mutated, 4-op patch)', server: ours, body: smcr },
      { name: 'pod without the annotation', server: ours, body: plain },
    ];
    // Warm every server up (JIT, TLS session state) so that no measured run pays for it.
    for (const server of [ours, ceiling, parsing, floor])
      await load(server, '/mutate', smcr, ca, 2);
    // The machine's speed drifts (other guests steal time): each round measures every case once,
    // starting from a different case, and a case's ratio compares it with the ceiling of its round.
    const runs = cases.map((): Load[] => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < cases.length; k++) {
        const i = (k + round) % cases.length;
        runs[i]!.push(await load(cases[i]!.server, '/mutate', cases[i]!.body, ca));
      }
    }
    const paced = await pacedRuns([ceiling, floor, ours], smcr, dir);
    return [
      ...cases.map((c, i) =>
        row(
          c,
          runs[i]!,
          i === 0 ? undefined : runs[0],
          i === 3 ? { runs: runs[2]!, min: 0.65 } : undefined,
        ),
      ),
      pacedRow(
        `bare node:https (ceiling) at a fixed ${PACED_RATE} req/s, one connection`,
        paced[0]!,
        undefined,
        undefined,
        h2load,
      ),
      pacedRow(`bare fastify at a fixed ${PACED_RATE} req/s`, paced[1]!, paced[0]!),
      pacedRow(`SMC-R pod review at a fixed ${PACED_RATE} req/s`, paced[2]!, paced[0]!, paced[1]!),
      ...inProcess,
    ];
  } finally {
    await Promise.all([
      stop(ours.child),
      stop(ceiling.child),
      stop(parsing.child),
      stop(floor.child),
    ]);
    rmSync(dir, { recursive: true, force: true });
  }
}
