// A slowloris against `erdma-smcr serve` as its own process, with its shipped defaults: 2,000
// connections that dribble headers or bodies, and 32 that park an almost-full 8 MiB body. The
// process must stay under the manifests' 256 Mi memory limit (it would be OOM-killed, and the
// webhook fails open), and reviews from a well-behaved client must keep their latency.
import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { connect as h2Connect, type ClientHttp2Session } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smcrReview } from '../../helpers/reviews.js';
import { postH1, SNI } from '../../helpers/tls.js';
import { startWebhookProc } from '../../harness/webhook-proc.js';

const LIMIT_BYTES = 256 * 1024 * 1024;
const review = JSON.stringify(smcrReview('pod-create'));

let child: ChildProcess;
let dir: string;
let port: number;
let metricsPort: number;
let ca: string;
const sockets: TLSSocket[] = [];
const sessions: ClientHttp2Session[] = [];
const timers: NodeJS.Timeout[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slowloris-'));
  const hook = await startWebhookProc({
    certDir: join(dir, 'certs'),
    cwd: dir,
    args: ['--log-level', 'warn'],
  });
  ({ child, port, metricsPort } = hook);
  ca = readFileSync(join(dir, 'certs', 'ca.crt'), 'utf8');
}, 30_000);

afterAll(() => {
  for (const t of timers) clearInterval(t);
  for (const s of sockets) s.destroy();
  for (const s of sessions) s.destroy();
  child?.kill('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Resident and peak resident memory of the server process, from /proc. */
function memory(): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

async function latencies(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = process.hrtime.bigint();
    const r = await postH1(port, ca, '/mutate', review);
    expect(r.status).toBe(200);
    out.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return out.sort((a, b) => a - b);
}

function connectH1(): Promise<TLSSocket> {
  return new Promise((ok) => {
    const s = tlsConnect(
      { host: '127.0.0.1', port, ca, servername: SNI, ALPNProtocols: ['http/1.1'] },
      () => ok(s),
    );
    s.on('error', () => undefined);
    s.resume();
    sockets.push(s);
  });
}

/** One slow client: partial headers dribbled a line at a time, or a body dribbled a byte at a time, or an HTTP/2 stream that never ends. */
async function slowClient(i: number): Promise<void> {
  if (i % 4 === 3) {
    const session = h2Connect(`https://127.0.0.1:${port}`, { ca, servername: SNI });
    session.on('error', () => undefined);
    sessions.push(session);
    const stream = session.request({
      ':method': 'POST',
      ':path': '/mutate',
      'content-type': 'application/json',
    });
    stream.on('error', () => undefined);
    stream.write('{"a":"');
    timers.push(setInterval(() => !stream.destroyed && stream.write('x'), 2000));
    return;
  }
  const s = await connectH1();
  if (i % 2 === 0) {
    s.write('POST /mutate HTTP/1.1\r\nHost: x\r\n');
    timers.push(setInterval(() => !s.destroyed && s.write(`X-${i}: y\r\n`), 2000));
  } else {
    s.write(
      'POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{',
    );
    timers.push(setInterval(() => !s.destroyed && s.write(' '), 2000));
  }
}

/** A client that sends 8 MiB - 1 KiB of an 8 MiB body, then goes silent. */
async function parkBody(): Promise<void> {
  const s = await connectH1();
  const size = 8 * 1024 * 1024;
  s.write(
    `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`,
  );
  s.write(Buffer.alloc(size - 1024, 0x20));
}

describe('slowloris against serve', () => {
  it('keeps RSS under 256 Mi and review latency near its baseline with 2,000 slow connections and 32 parked 8 MiB bodies', async () => {
    await latencies(30); // warm up
    const before = await latencies(30);
    for (let i = 0; i < 2000; i++) {
      await slowClient(i);
      if (i % 100 === 99) await new Promise((r) => setTimeout(r, 20));
    }
    await Promise.all(Array.from({ length: 32 }, () => parkBody()));
    await new Promise((r) => setTimeout(r, 2000));
    const during = await latencies(30);
    const mem = memory();
    const median = (xs: number[]): number => xs[Math.floor(xs.length / 2)]!;
    console.log(
      `slowloris: RSS ${(mem.rss / 2 ** 20).toFixed(0)} MiB (peak ${(mem.peak / 2 ** 20).toFixed(0)} MiB); ` +
        `review median ${median(before).toFixed(1)} ms before, ${median(during).toFixed(1)} ms during`,
    );
    expect(mem.peak).toBeLessThan(LIMIT_BYTES);
    expect(median(during)).toBeLessThan(Math.max(3 * median(before), median(before) + 30));
    // The bounds did the work: connections capped by eviction, parked bodies dropped.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const value = (name: string): number =>
      Number(new RegExp(`^${name} (\\d+)`, 'm').exec(metrics)?.[1]);
    expect(value('erdma_smcr_admission_connections')).toBeLessThanOrEqual(500);
    expect(value('erdma_smcr_admission_evicted_connections_total')).toBeGreaterThan(1400);
    expect(value('erdma_smcr_admission_dropped_bodies_total')).toBeGreaterThan(0);
  }, 180_000);
});
