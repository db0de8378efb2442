// One hostile user against `erdma-smcr serve` as its own process, with the NODE_OPTIONS of its
// Deployment (#37): each flood that once took the webhook past its 256 Mi memory limit (an OOM
// kill admits pods unreviewed) or past the API server's 5 s timeout, and the bound that holds it
// now, measured from outside: RSS and its peak from /proc, connection and stream counts from the
// metrics port, latencies of an ordinary client's reviews.
import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as h2Connect, type ClientHttp2Session } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { deploymentNodeOptions } from '../../../bench/scale.js';
import { smcrReview } from '../../helpers/reviews.js';
import { postH1, SNI } from '../../helpers/tls.js';
import { startWebhookProc } from '../../harness/webhook-proc.js';

/** The manifests' memory limit is 256 Mi; every flood must leave room under it. */
const PEAK_BOUND = 192 * 2 ** 20;
const MB = 2 ** 20;

interface Serve {
  readonly child: ChildProcess;
  readonly port: number;
  readonly metricsPort: number;
  readonly ca: string;
  readonly dir: string;
}

const running: Serve[] = [];
const clients: { destroy(): void }[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.destroy();
  for (const s of running.splice(0)) {
    s.child.kill('SIGKILL');
    rmSync(s.dir, { recursive: true, force: true });
  }
});

async function serve(extra: string[] = [], files: Record<string, string> = {}): Promise<Serve> {
  const dir = mkdtempSync(join(tmpdir(), 'flood-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const hook = await startWebhookProc({
    certDir: join(dir, 'certs'),
    cwd: dir,
    args: ['--log-level', 'warn', ...extra],
    env: { NODE_OPTIONS: deploymentNodeOptions() },
  });
  const { child } = hook;
  const ports = [hook.port, hook.metricsPort] as const;
  const s = {
    child,
    port: ports[0],
    metricsPort: ports[1],
    ca: readFileSync(join(dir, 'certs', 'ca.crt'), 'utf8'),
    dir,
  };
  running.push(s);
  return s;
}

function memory(s: Serve): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${s.child.pid}/status`, 'utf8');
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

async function metric(s: Serve, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const review = JSON.stringify(smcrReview('pod-create'));

function withSpec(spec: Record<string, unknown>, annotations: Record<string, string> = {}): string {
  const r = smcrReview('pod-create', annotations) as {
    request: { object: { spec: Record<string, unknown> } };
  };
  Object.assign(r.request.object.spec, spec);
  return JSON.stringify(r);
}

async function timed(
  s: Serve,
  body: string,
): Promise<{ ms: number; status: number; body: string }> {
  const started = process.hrtime.bigint();
  const r = await postH1(s.port, s.ca, '/mutate', body);
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, status: r.status, body: r.body };
}

describe('floods against serve, each within its bound', () => {
  it('C: 250 HTTP/2 sessions × 128 streams stalled after 5 body bytes stay under the bound, and reviews still pass', async () => {
    const s = await serve();
    for (let i = 0; i < 250; i++) {
      const session: ClientHttp2Session = h2Connect(`https://127.0.0.1:${s.port}`, {
        ca: s.ca,
        servername: SNI,
      });
      session.on('error', () => undefined);
      clients.push(session);
      for (let k = 0; k < 128; k++) {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/mutate',
          'content-type': 'application/json',
        });
        stream.on('error', () => undefined);
        stream.write('{"a":');
      }
      if (i % 25 === 24) await sleep(50);
    }
    await sleep(3000);
    const mem = memory(s);
    console.log(
      `stalled streams: RSS ${(mem.rss / MB).toFixed(0)} MiB, peak ${(mem.peak / MB).toFixed(0)} MiB`,
    );
    expect(mem.peak).toBeLessThan(PEAK_BOUND);
    expect(await metric(s, 'erdma_smcr_admission_streams')).toBeLessThanOrEqual(256);
    expect(await metric(s, 'erdma_smcr_admission_cancelled_streams_total')).toBeGreaterThan(0);
    expect((await timed(s, review)).status).toBe(200);
  }, 120_000);

  it('D: 3,500 connections that each send one review and stay idle are capped at 500', async () => {
    const s = await serve();
    for (let i = 0; i < 3500; i++) {
      await new Promise<void>((ok) => {
        const socket: TLSSocket = tlsConnect(
          {
            host: '127.0.0.1',
            port: s.port,
            ca: s.ca,
            servername: SNI,
            ALPNProtocols: ['http/1.1'],
          },
          () => {
            socket.write(
              `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(review)}\r\n\r\n${review}`,
            );
          },
        );
        socket.on('error', () => ok());
        socket.on('close', () => ok());
        let got = '';
        socket.on('data', (d: Buffer) => {
          got += d.toString();
          if (got.includes('"response"')) ok();
        });
        clients.push(socket);
      });
    }
    await sleep(500);
    const mem = memory(s);
    console.log(
      `idle answered connections: RSS ${(mem.rss / MB).toFixed(0)} MiB, peak ${(mem.peak / MB).toFixed(0)} MiB`,
    );
    expect(await metric(s, 'erdma_smcr_admission_connections')).toBeLessThanOrEqual(500);
    expect(
      await metric(s, 'erdma_smcr_admission_evicted_connections_total'),
    ).toBeGreaterThanOrEqual(2900);
    expect(mem.peak).toBeLessThan(PEAK_BOUND);
    expect((await timed(s, review)).status).toBe(200);
  }, 180_000);

  it('A: a 2.9 MiB pod with 39,000 node selector terms, alone and two at once, is refused quickly with a small answer', async () => {
    const s = await serve();
    const terms = Array.from({ length: 39_000 }, (_, i) => ({
      matchExpressions: [{ key: 'zone', operator: 'In', values: [`zone-${i}`] }],
    }));
    const body = withSpec({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms },
        },
      },
    });
    expect(body.length).toBeGreaterThan(2.5 * MB);
    const one = await timed(s, body);
    expect(one.status).toBe(200);
    expect(one.body.length).toBeLessThan(2048);
    expect(JSON.parse(one.body).response.status.message).toMatch(/^\[object-size\] .*39000 terms/);
    const two = await Promise.all([timed(s, body), timed(s, body)]);
    expect(two.map((t) => t.status)).toEqual([200, 200]);
    const mem = memory(s);
    console.log(
      `39,000 terms: ${one.ms.toFixed(0)} ms alone, ${two.map((t) => t.ms.toFixed(0)).join(' and ')} ms two at once; peak ${(mem.peak / MB).toFixed(0)} MiB`,
    );
    expect(mem.peak).toBeLessThan(PEAK_BOUND);
  }, 60_000);

  it('A: pods with 216,000 annotations, three at once, are refused within the bound', async () => {
    const s = await serve();
    const annotations: Record<string, string> = {};
    for (let i = 0; i < 216_000; i++) annotations[`k${i}`] = 'v';
    const body = withSpec({}, annotations);
    const all = await Promise.all(Array.from({ length: 3 }, () => timed(s, body)));
    for (const r of all) {
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body).response.status.message).toMatch(
        /^\[object-size\] metadata\.annotations/,
      );
    }
    const mem = memory(s);
    console.log(`216,000 annotations ×3: peak ${(mem.peak / MB).toFixed(0)} MiB`);
    expect(mem.peak).toBeLessThan(PEAK_BOUND);
  }, 60_000);

  it('B: with a 500-node view, an ordinary review keeps its latency while another client sends worst-case reviews back to back', async () => {
    const nodes = Array.from({ length: 500 }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: `n${i}`,
        labels: {
          zone: `z${i % 5}`,
          ...Object.fromEntries(Array.from({ length: 9 }, (_, k) => [`k${k}`, 'v'])),
          'smcr.erdma.io/capable': i % 2 ? 'true' : 'false',
        },
      },
      status: {
        nodeInfo: { kernelVersion: '5.10.134-17.3.al8.x86_64', osImage: 'Alibaba Cloud Linux 3' },
      },
    }));
    const s = await serve(['--nodes', 'nodes.json'], {
      'nodes.json': JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }),
    });
    // The most a pod may ask within the limits: 100 terms of 10 requirements, each term failing only at its last.
    const terms = Array.from({ length: 100 }, (_, t) => ({
      matchExpressions: [
        ...Array.from({ length: 9 }, (_, k) => ({ key: `k${k}`, operator: 'Exists' })),
        { key: 'zone', operator: 'In', values: [`nowhere-${t}`] },
      ],
    }));
    const worst = withSpec({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms },
        },
      },
    });
    const before: number[] = [];
    for (let i = 0; i < 20; i++) before.push((await timed(s, review)).ms);
    let stop = false;
    let sent = 0;
    const attacker = (async () => {
      while (!stop) {
        expect((await timed(s, worst)).status).toBe(200);
        sent += 1;
      }
    })();
    const during: number[] = [];
    for (let i = 0; i < 40; i++) during.push((await timed(s, review)).ms);
    stop = true;
    await attacker;
    during.sort((a, b) => a - b);
    console.log(
      `worst-case reviews: ${sent} sent; ordinary review max ${during.at(-1)!.toFixed(0)} ms (was 5,600-7,800 ms)`,
    );
    expect(sent).toBeGreaterThan(5);
    // "Well under 1 s": the API server's timeout is 5 s, and an ordinary review alone takes a few ms.
    expect(during.at(-1)!).toBeLessThan(500);
  }, 120_000);
});
