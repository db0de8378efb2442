// Benchmark: the webhook under load over TLS with keep-alive (autocannon), against a bare
// node:https server returning a fixed response (the ceiling for Node on this machine), same run.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import type { BenchRow } from './report.js';

const SNI = 'erdma-smcr-webhook.erdma-smcr.svc';
const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const CONNECTIONS = 8;

async function startChild(args: string[], pattern: RegExp): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
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
  return { child, port };
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * CPU time (user + system, all threads) a process has used, in µs, from /proc/<pid>/stat. Its
 * unit is USER_HZ, which Linux fixes at 100 for user space on every architecture we run on.
 */
function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

interface Load extends autocannon.Result {
  /** Server CPU per answered request, µs: steadier than req/s on a shared machine. */
  readonly cpuPerRequest: number;
}

async function load(server: { child: ChildProcess; port: number }, path: string, body: string, ca: string, overallRate?: number, duration = DURATION): Promise<Load> {
  const pid = server.child.pid ?? 0;
  const before = cpuMicros(pid);
  const result = await autocannon({
    url: `https://127.0.0.1:${server.port}${path}`,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
    connections: overallRate ? 4 : CONNECTIONS,
    duration,
    servername: SNI,
    tlsOptions: { ca },
    ...(overallRate ? { overallRate } : {}),
  } as autocannon.Options);
  return { ...result, cpuPerRequest: (cpuMicros(pid) - before) / Math.max(1, result.requests.total) };
}

function review(withAnnotation: boolean): string {
  const r = JSON.parse(readFileSync('test/fixtures/apiserver-v1.20.2/admissionreview-pod-create-by-replicaset-controller.json', 'utf8'));
  if (withAnnotation) r.request.object.metadata.annotations = { 'network.alibabacloud.com/erdma-smcr': 'true', 'smcr.erdma.io/wmem': '262144' };
  return JSON.stringify(r);
}

function row(name: string, r: Load, ceiling?: Load, target?: string): BenchRow {
  const errors = r.errors + r.non2xx;
  const cpu = `server CPU ${Math.round(r.cpuPerRequest)} µs/request${ceiling ? ` (${(r.cpuPerRequest / ceiling.cpuPerRequest).toFixed(1)}× the ceiling's)` : ''}`;
  return {
    bench: 'webhook',
    case: name,
    value: r.requests.average,
    unit: 'req/s',
    ...(ceiling ? { ratio: r.requests.average / ceiling.requests.average } : { ratio: 1 }),
    extra: `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${cpu}${errors ? `, ${errors} errors` : ''}`,
    ...(target ? { target } : {}),
  };
}

export async function benchWebhook(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhook-'));
  const ours = await startChild(['bin/erdma-smcr.js', 'serve', '--port', '0', '--no-metrics', '--cert-dir', dir, '--log-level', process.env.BENCH_LOG_LEVEL ?? 'info'], /listening on https:\/\/127\.0\.0\.1:(\d+)/);
  const ceiling = await startChild(['bench/ceiling-server.mjs', join(dir, 'tls.key'), join(dir, 'tls.crt')], /port (\d+)/);
  const parsing = await startChild(['bench/ceiling-server.mjs', join(dir, 'tls.key'), join(dir, 'tls.crt'), '--parse'], /port (\d+)/);
  const floor = await startChild(['bench/fastify-floor.mjs', join(dir, 'tls.key'), join(dir, 'tls.crt')], /port (\d+)/);
  const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
  try {
    const smcr = review(true);
    const plain = review(false);
    // Warm every server up (JIT, TLS session state) so that no measured run pays for it.
    for (const server of [ours, ceiling, parsing, floor]) await load(server, '/mutate', smcr, ca, undefined, 2);
    const base = await load(ceiling, '/mutate', smcr, ca);
    const parsed = await load(parsing, '/mutate', smcr, ca);
    const bareFastify = await load(floor, '/mutate', smcr, ca);
    const hot = await load(ours, '/mutate', smcr, ca);
    const cold = await load(ours, '/mutate', plain, ca);
    const paced = await load(ours, '/mutate', smcr, ca, 500);
    return [
      row(`bare node:https, fixed response (ceiling), ${CONNECTIONS} connections`, base),
      row('bare node:https that JSON.parses the body, fixed response', parsed, base),
      row('bare fastify (our transport options, JSON body parsed), fixed response', bareFastify, base),
      row('SMC-R pod review (mutated, 4-op patch)', hot, base, '>= 70% of ceiling'),
      row('pod without the annotation', cold, base),
      { ...row('SMC-R pod review at a fixed 500 req/s', paced, base, 'p99 < 10 ms'), ratio: undefined },
    ];
  } finally {
    await Promise.all([stop(ours.child), stop(ceiling.child), stop(parsing.child), stop(floor.child)]);
    rmSync(dir, { recursive: true, force: true });
  }
}
