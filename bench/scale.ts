// The webhook's live view at production size (#37), against the harness's real 1.37 API server:
// 0, 500, 5,000 and 20,000 ACK-shaped Nodes (test/harness/k8s/nodes.ts, about 12 KB each), then
// `serve --cluster live` as its own process with the NODE_OPTIONS its Deployment sets. Per size:
// - ready: from start until /readyz answers 200 (the first list done);
// - RSS idle (VmRSS, 3 s after ready), and the peak (VmHWM) from the first list through the churn;
// - under churn: kubelet status updates at count/300 per second (each node once per 5 min, the
//   kubelet's default report period) for CHURN_SECONDS, while SMC-R reviews are sent one at a time,
//   in turn over one kept-alive connection (as the API server sends them: an HTTP/1.1 client whose
//   transport keeps idle connections, kubernetes#82090 and #139237) and over a fresh TLS connection
//   (its first call on a new connection): serve's CPU (from /proc/<pid>/stat) and each kind's p50/p99.
//   In the same turn, the same review goes over a kept-alive connection to the bare node:https server
//   of bench webhook (bench/ceiling-server.mjs: same certificate, parses the body, answers a fixed
//   review): the floor this machine puts under any webhook's round trip at that moment.
// The baseline is the same server with no nodes, in the same run. ERDMA_SMCR_BENCH_BIN runs
// another build of the CLI instead (the before/after in docs/benchmarks.md).
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jsyaml from 'js-yaml';
import type { BenchRow } from './report.js';
import { median } from './report.js';
import { cpuMicros, startChild, stop } from './webhook.js';
import { startWebhookProc } from '../test/harness/webhook-proc.js';
import { binariesPresent, startControlPlane } from '../test/harness/k8s/control-plane.js';
import { Api, churn, createNodes } from '../test/harness/k8s/nodes.js';

const SIZES = (process.env.ERDMA_SMCR_BENCH_SCALE_SIZES ?? '0,500,5000,20000')
  .split(',')
  .map(Number);
const CHURN_SECONDS = 20;
const IDLE_SETTLE_MS = 3000;
/** Reviews sent per second: serve kept-alive, serve over fresh TLS and the bare server, in turn. */
const REVIEWS_PER_SECOND = 60;
const MB = 1e6;
const SNI = 'erdma-smcr-webhook.erdma-smcr.svc';

/**
 * #37's targets at 5,000 nodes; at 20,000, #72's: the reviews the API server sends (kept-alive) within
 * 5 ms at p99 under the full status rate, and serve within 128 MB (and always the 256 Mi limit).
 */
const TARGETS = {
  p99KeptMs20k: 5,
  peakMB20k: 128,
  idleMB: 128,
  peakMB: 192,
  readyS: 10,
  cpu: 0.15,
  p99Ms: 10,
  limitMB: 256 * 1.048576,
};

function status(pid: number, key: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(
    readFileSync(`/proc/${pid}/status`, 'utf8'),
  );
  return Number(m?.[1] ?? 0) * 1024;
}

/** A manifest's container: what the benches read of it to run a process as it ships. */
export interface Container {
  command?: string[];
  env?: { name: string; value?: string }[];
}

/** The Node flags of a container's command (`node FLAGS... /app/bin/erdma-smcr.js`). */
export function commandNodeFlags(c: Container): string[] {
  return (c.command ?? []).slice(1).filter((a) => a.startsWith('--'));
}

/** The webhook Deployment's container, as manifests/base/webhook.yaml declares it. */
function webhookContainer(): Container {
  type Doc = { kind?: string; spec?: { template: { spec: { containers: Container[] } } } };
  const docs = jsyaml.loadAll(readFileSync('manifests/base/webhook.yaml', 'utf8')) as Doc[];
  const c = docs.find((d) => d?.kind === 'Deployment')?.spec?.template.spec.containers[0];
  if (!c) throw new Error('manifests/base/webhook.yaml declares no Deployment container');
  return c;
}

/**
 * The webhook Deployment's NODE_OPTIONS (the server is measured as it ships), or
 * ERDMA_SMCR_BENCH_NODE_OPTIONS when set (an older build, measured as it shipped).
 */
export function deploymentNodeOptions(): string {
  if (process.env.ERDMA_SMCR_BENCH_NODE_OPTIONS !== undefined)
    return process.env.ERDMA_SMCR_BENCH_NODE_OPTIONS;
  return webhookContainer().env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
}

/**
 * The Node flags of the Deployment's command (`node FLAGS... /app/bin/erdma-smcr.js`), which
 * NODE_OPTIONS may not hold (`--no-maglev`); ERDMA_SMCR_BENCH_NODE_FLAGS (space-separated) when
 * set, as for NODE_OPTIONS above.
 */
export function deploymentNodeFlags(): string[] {
  const env = process.env.ERDMA_SMCR_BENCH_NODE_FLAGS;
  if (env !== undefined) return env.split(' ').filter(Boolean);
  return commandNodeFlags(webhookContainer());
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function get(port: number, path: string): Promise<number> {
  return fetch(`http://127.0.0.1:${port}${path}`).then(
    (r) => r.status,
    () => 0,
  );
}

/** One review, over `agent`'s kept-alive connection or (false) a fresh TLS one; its time in ms. */
function reviewOnce(port: number, ca: string, body: string, agent: Agent | false): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate',
        method: 'POST',
        ca,
        servername: SNI,
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Number(process.hrtime.bigint() - started) / 1e6)
            : reject(new Error(`review: HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The SMC-R review of the fixtures, and one pinned by nodeSelector where capable nodes are (found among the usable nodes). */
function reviews(): string[] {
  const base = JSON.parse(
    readFileSync('test/fixtures/apiserver-v1.37.2/admissionreview-pod-create.json', 'utf8'),
  ) as {
    request: {
      object: { metadata: { annotations?: Record<string, string> }; spec: Record<string, unknown> };
    };
  };
  base.request.object.metadata.annotations = { 'network.alibabacloud.com/erdma-smcr': 'true' };
  const pinned = structuredClone(base);
  pinned.request.object.spec.nodeSelector = {
    'topology.kubernetes.io/zone': 'cn-hangzhou-h',
    'node.kubernetes.io/instance-type': 'ecs.g8i.8xlarge',
  };
  return [JSON.stringify(base), JSON.stringify(pinned)];
}

const percentile = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

interface Measured {
  readonly readyS: number;
  readonly idle: number;
  readonly peak: number;
  readonly cpu: number;
  /** Reviews over one kept-alive connection, and over a fresh TLS connection each. */
  readonly kept: Latencies;
  readonly fresh: Latencies;
  /** The bare node:https server's, over its own kept-alive connection in the same turn. */
  readonly floor: Latencies;
  readonly churned: number;
  /** Of the reviews under churn, the share serve's own histogram put within 0.5 ms, and within 1 ms. */
  readonly handled: readonly [number, number];
}

/** The mutate endpoint's cumulative histogram buckets (le in seconds → count) from serve's metrics. */
export function durationBuckets(metrics: string): Map<string, number> {
  const out = new Map<string, number>();
  const re =
    /^erdma_smcr_admission_duration_seconds_bucket\{le="([^"]+)",endpoint="mutate"\} (\d+)/gm;
  for (const m of metrics.matchAll(re)) out.set(m[1]!, Number(m[2]));
  return out;
}

/** The share of the reviews between two scrapes that serve decided within each bound. */
export function handledWithin(before: string, after: string, bounds: readonly string[]): number[] {
  const a = durationBuckets(before);
  const b = durationBuckets(after);
  const total = (b.get('+Inf') ?? 0) - (a.get('+Inf') ?? 0);
  return bounds.map((le) => ((b.get(le) ?? 0) - (a.get(le) ?? 0)) / Math.max(1, total));
}

interface Latencies {
  readonly p50: number;
  readonly p99: number;
  /** p50 / p99 in ms of the unpinned and of the pinned review. */
  readonly kinds: readonly string[];
}

function latencies(bodies: number, samples: readonly (readonly [number, number])[]): Latencies {
  const all = samples.map(([, ms]) => ms);
  const byKind = [...Array(bodies).keys()].map((k) =>
    samples.filter(([kind]) => kind === k).map(([, ms]) => ms),
  );
  return {
    p50: median(all),
    p99: percentile(all, 99),
    kinds: byKind.map((xs) => `${median(xs).toFixed(1)} / ${percentile(xs, 99).toFixed(1)}`),
  };
}

async function measure(
  bin: string,
  kubeconfig: string,
  api: Api,
  count: number,
  dir: string,
): Promise<Measured> {
  const started = Date.now();
  const server = await startWebhookProc({
    bin,
    nodeFlags: deploymentNodeFlags(),
    certDir: join(dir, `certs-${count}`),
    args: ['--log-level', 'warn', '--cluster', 'live', '--kubeconfig', kubeconfig],
    env: { NODE_OPTIONS: deploymentNodeOptions() },
    startMs: 120_000,
  });
  try {
    const pid = server.child.pid ?? 0;
    const ca = server.caPem;
    const { metricsPort } = server;
    while ((await get(metricsPort, '/readyz')) !== 200) {
      if (Date.now() - started > 120_000)
        throw new Error(`serve not ready after 120 s with ${count} nodes`);
      await sleep(50);
    }
    const readyS = (Date.now() - started) / 1000;
    await sleep(IDLE_SETTLE_MS);
    const idle = status(pid, 'VmRSS');
    const bodies = reviews();
    const updates = churn(api, count, count / 300);
    const cpuBefore = cpuMicros(pid);
    const metricsBefore = await server.metrics();
    const t0 = process.hrtime.bigint();
    // One connection kept to each, as the API server's transport keeps it; their first reviews
    // are not timed.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const bareAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    const certs = join(dir, `certs-${count}`);
    const bare = await startChild(
      ['bench/ceiling-server.mjs', join(certs, 'tls.key'), join(certs, 'tls.crt'), '--parse'],
      /port (\d+)/,
    );
    const kept: [number, number][] = [];
    const fresh: [number, number][] = [];
    const floor: [number, number][] = [];
    const turn = [
      { port: server.port, agent, into: kept },
      { port: server.port, agent: false as const, into: fresh },
      { port: bare.port, agent: bareAgent, into: floor },
    ];
    try {
      await reviewOnce(server.port, ca, bodies[0]!, agent);
      await reviewOnce(bare.port, ca, bodies[0]!, bareAgent);
      const end = Date.now() + CHURN_SECONDS * 1000;
      for (let i = 0; Date.now() < end; i++) {
        const kind = Math.floor(i / turn.length) % bodies.length;
        const to = turn[i % turn.length]!;
        to.into.push([kind, await reviewOnce(to.port, ca, bodies[kind]!, to.agent)]);
        await sleep(1000 / REVIEWS_PER_SECOND);
      }
    } finally {
      agent.destroy();
      bareAgent.destroy();
      await stop(bare.child);
    }
    const cpu = (cpuMicros(pid) - cpuBefore) / (Number(process.hrtime.bigint() - t0) / 1e3);
    const [within500us = 0, within1ms = 0] = handledWithin(metricsBefore, await server.metrics(), [
      '0.0005',
      '0.001',
    ]);
    await updates.stop();
    return {
      readyS,
      idle,
      peak: status(pid, 'VmHWM'),
      cpu,
      kept: latencies(bodies.length, kept),
      fresh: latencies(bodies.length, fresh),
      floor: latencies(bodies.length, floor),
      churned: updates.sent(),
      handled: [within500us, within1ms],
    };
  } finally {
    await server.stop();
  }
}

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;

function rows(count: number, m: Measured, base: Measured, label: string): BenchRow[] {
  const at5k = count === 5000;
  const at20k = count === 20000;
  const limit = count > 5000;
  const judge = (ok: boolean): string => (ok ? 'met' : 'not met');
  const name = `${count.toLocaleString('en-US')} nodes${label}`;
  const memoryTarget = (bytes: number, at5kMB: number): Pick<BenchRow, 'target'> =>
    at5k
      ? { target: `≤ ${at5kMB} MB: ${judge(bytes / MB <= at5kMB)}` }
      : at20k
        ? { target: `≤ ${TARGETS.peakMB20k} MB: ${judge(bytes / MB <= TARGETS.peakMB20k)}` }
        : limit
          ? { target: `256 Mi limit: ${judge(bytes / MB <= TARGETS.limitMB)}` }
          : {};
  const review = (
    how: string,
    l: Latencies,
    b: Latencies,
    target: number | undefined,
  ): BenchRow => ({
    bench: 'scale',
    case: `${name}: review p99 under churn (${how})`,
    value: l.p99,
    unit: 'ms',
    ratio: l.p99 / b.p99,
    extra: `p50 ${l.p50.toFixed(1)} ms; unpinned p50 / p99 ${l.kinds[0]} ms, pinned ${l.kinds[1]} ms`,
    ...(target !== undefined ? { target: `≤ ${target} ms: ${judge(l.p99 <= target)}` } : {}),
  });
  const kept = review(
    'kept-alive connection, as the API server sends',
    m.kept,
    base.kept,
    at20k ? TARGETS.p99KeptMs20k : undefined,
  );
  return [
    {
      bench: 'scale',
      case: `${name}: ready`,
      value: m.readyS,
      unit: 's',
      ...(at5k ? { target: `≤ ${TARGETS.readyS} s: ${judge(m.readyS <= TARGETS.readyS)}` } : {}),
    },
    {
      bench: 'scale',
      case: `${name}: RSS idle`,
      value: m.idle / MB,
      unit: 'MB',
      ratio: m.idle / base.idle,
      ...memoryTarget(m.idle, TARGETS.idleMB),
    },
    {
      bench: 'scale',
      case: `${name}: RSS peak, first list through the churn`,
      value: m.peak / MB,
      unit: 'MB',
      ratio: m.peak / base.peak,
      ...memoryTarget(m.peak, TARGETS.peakMB),
    },
    {
      bench: 'scale',
      case: `${name}: serve CPU under churn`,
      value: m.cpu * 100,
      unit: '% of a core',
      extra: `${m.churned} status updates in ${CHURN_SECONDS} s`,
      ...(at5k ? { target: `≤ ${TARGETS.cpu * 100}%: ${judge(m.cpu <= TARGETS.cpu)}` } : {}),
    },
    {
      ...kept,
      extra: `${kept.extra}; serve's own timing: ${pct(m.handled[0])} decided within 0.5 ms, ${pct(m.handled[1])} within 1 ms`,
    },
    {
      bench: 'scale',
      case: `${name}: the bare node:https server's p99 in the same turn (this machine's floor)`,
      value: m.floor.p99,
      unit: 'ms',
      ratio: m.kept.p99 / m.floor.p99,
      extra: `p50 ${m.floor.p50.toFixed(1)} ms; ratio: serve's kept-alive p99 over this`,
    },
    review('fresh TLS connection each', m.fresh, base.fresh, at5k ? TARGETS.p99Ms : undefined),
  ];
}

export async function benchScale(): Promise<BenchRow[]> {
  if (binariesPresent().length > 0)
    throw new Error('bench scale needs the harness API server: run test/harness/k8s/build.sh');
  const bin = process.env.ERDMA_SMCR_BENCH_BIN ?? 'bin/erdma-smcr.js';
  const label = process.env.ERDMA_SMCR_BENCH_BIN ? ` (${process.env.ERDMA_SMCR_BENCH_BIN})` : '';
  const dir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
  const cp = await startControlPlane();
  const api = new Api(cp);
  try {
    const out: BenchRow[] = [];
    let created = 0;
    let base: Measured | undefined;
    for (const count of [...SIZES].sort((a, b) => a - b)) {
      const t = Date.now();
      await createNodes(api, created, count);
      process.stderr.write(
        `  ${count} nodes (created ${count - created} in ${((Date.now() - t) / 1000).toFixed(0)} s)\n`,
      );
      created = Math.max(created, count);
      const m = await measure(bin, cp.kubeconfig, api, count, dir);
      base ??= m;
      out.push(...rows(count, m, base, label));
    }
    return out;
  } finally {
    api.close();
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
