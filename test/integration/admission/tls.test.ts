// End to end over real TLS on an ephemeral loopback port: the generated CA pinned, SNI set to the
// Service name, HTTP/1.1 and HTTP/2, certificate reload, graceful shutdown.
import { Agent } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ensureLocalCerts } from '../../../src/certs/local.js';
import { SETTINGS_ANNOTATION } from '../../../src/constants.js';
import { applyResponse, smcrReview } from '../../helpers/reviews.js';
import {
  h2Session,
  postH1,
  postH2,
  SNI,
  startTestServer,
  type TestServer,
} from '../../helpers/tls.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.stop());

const review = smcrReview('pod-create-by-replicaset-controller');
const body = JSON.stringify(review);

function expectMutated(text: string): void {
  const res = JSON.parse(text).response;
  expect(res.allowed).toBe(true);
  const pod = applyResponse(review, res) as { metadata: { annotations: Record<string, string> } };
  expect(pod.metadata.annotations[SETTINGS_ANNOTATION]).toContain('tcp2smc');
}

describe('webhook over TLS', () => {
  it('answers over HTTP/1.1 with the CA pinned and SNI set to the Service name', async () => {
    const r = await postH1(t.server.port, t.ca(), '/mutate?timeout=10s', body);
    expect(r.status).toBe(200);
    expectMutated(r.body);
  });

  it('answers over HTTP/2', async () => {
    const s = h2Session(t.server.port, t.ca());
    try {
      const r = await postH2(s, '/mutate?timeout=10s', body);
      expect(r.status).toBe(200);
      expectMutated(r.body);
    } finally {
      s.close();
    }
  });

  it('offers h2 and http/1.1 over ALPN and refuses TLS 1.1', async () => {
    const alpn = await new Promise<string | false>((resolve, reject) => {
      const s = tlsConnect(
        {
          host: '127.0.0.1',
          port: t.server.port,
          ca: t.ca(),
          servername: SNI,
          ALPNProtocols: ['h2', 'http/1.1'],
        },
        () => {
          resolve(s.alpnProtocol ?? false);
          s.end();
        },
      );
      s.on('error', reject);
    });
    expect(alpn).toBe('h2');
    await expect(
      new Promise((resolve, reject) => {
        const s = tlsConnect(
          {
            host: '127.0.0.1',
            port: t.server.port,
            ca: t.ca(),
            servername: SNI,
            minVersion: 'TLSv1',
            maxVersion: 'TLSv1.1',
          },
          () => resolve(s),
        );
        s.on('error', reject);
      }),
    ).rejects.toThrow();
  });

  it('fails verification for a client that expects another name', async () => {
    await expect(
      new Promise((resolve, reject) => {
        const s = tlsConnect(
          { host: '127.0.0.1', port: t.server.port, ca: t.ca(), servername: 'other.example.svc' },
          () => resolve(s),
        );
        s.on('error', reject);
      }),
    ).rejects.toThrow(/altnames|Hostname/i);
  });

  it('serves /metrics and probes on the plain-HTTP port', async () => {
    const res = await fetch(`http://127.0.0.1:${t.server.metricsPort}/metrics`);
    expect(await res.text()).toMatch(/erdma_smcr_admission_requests_total/);
    expect((await fetch(`http://127.0.0.1:${t.server.metricsPort}/readyz`)).status).toBe(200);
  });

  it('reloads a new certificate from disk without a restart and without failing requests in flight', async () => {
    const oldCa = t.ca();
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    let failures = 0;
    let done = 0;
    let stop = false;
    const load = (async () => {
      while (!stop) {
        // Requests on kept-alive connections established under the old certificate.
        const r = await postH1(t.server.port, oldCa, '/mutate', body, agent).catch(() => ({
          status: 0,
          body: '',
        }));
        if (r.status !== 200) failures++;
        done++;
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    rmSync(t.dir, { recursive: true, force: true });
    ensureLocalCerts({ dir: t.dir, service: 'erdma-smcr-webhook', namespace: 'erdma-smcr' });
    const newCa = t.ca();
    expect(newCa).not.toBe(oldCa);
    let reloaded = false;
    for (let i = 0; i < 50 && !reloaded; i++) {
      await new Promise((r) => setTimeout(r, 100));
      reloaded = await postH1(t.server.port, newCa, '/mutate', body).then(
        () => true,
        () => false,
      );
    }
    stop = true;
    await load;
    agent.destroy();
    expect(reloaded).toBe(true);
    expect(failures).toBe(0);
    expect(done).toBeGreaterThan(5);
    await expect(postH1(t.server.port, oldCa, '/mutate', body)).rejects.toThrow(/certificate/);
    const metrics = await (await fetch(`http://127.0.0.1:${t.server.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/erdma_smcr_certificate_reloads_total\{result="ok"\} [1-9]/);
  });
});

describe('graceful shutdown', () => {
  it('finishes a request in flight, closes idle keep-alive connections at once, and stops accepting', async () => {
    const s = await startTestServer();
    const agent = new Agent({ keepAlive: true, maxSockets: 2 });
    const h2 = h2Session(s.server.port, s.ca());
    // Pass or fail: no server, connection or certificate directory is left behind.
    onTestFinished(async () => {
      agent.destroy();
      h2.close();
      await s.stop();
    });
    // Two kept-alive connections: one idle, one carrying a request when close() starts.
    await Promise.all([
      postH1(s.server.port, s.ca(), '/mutate', body, agent),
      postH1(s.server.port, s.ca(), '/mutate', body, agent),
    ]);
    await postH2(h2, '/mutate', body);
    // Both requests have sent half their body when close() starts, and the rest after.
    let closed: Promise<void> | undefined;
    const started = Date.now();
    const pause = () => new Promise((r) => setTimeout(r, 150));
    const startClose = async () => {
      await pause();
      closed ??= s.server.close();
      await pause();
    };
    const [r1, r2] = await Promise.all([
      postH1(s.server.port, s.ca(), '/mutate', body, agent, startClose),
      postH2(h2, '/mutate', body, startClose),
    ]);
    expect(r1.status).toBe(200);
    expect(r2.status).toBe(200);
    await closed;
    // The idle kept-alive connection did not hold the close up (keepAliveTimeout is 65 s).
    expect(Date.now() - started).toBeLessThan(3000);
    await expect(postH1(s.server.port, s.ca(), '/mutate', body)).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('shutdown delay (webhook.shutdownDelayMs)', () => {
  it('fails /readyz at once but keeps accepting and serving for the delay, then stops accepting', async () => {
    const s = await startTestServer({ 'webhook.shutdownDelayMs': 1500 });
    onTestFinished(() => s.stop());
    const readyz = async (): Promise<number> =>
      (await fetch(`http://127.0.0.1:${s.server.metricsPort}/readyz`)).status;
    expect(await readyz()).toBe(200);
    const closed = s.server.close();
    await new Promise((r) => setTimeout(r, 200));
    expect(await readyz()).toBe(503);
    // A new connection during the delay (kube-proxy still sending us traffic) is served in full.
    const during = await postH1(s.server.port, s.ca(), '/mutate', body);
    expect(during.status).toBe(200);
    expectMutated(during.body);
    await closed;
    await expect(postH1(s.server.port, s.ca(), '/mutate', body)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('closes each kept-alive HTTP/1.1 connection after its next response during the delay, so that none is closed idle under a client that just sent on it', async () => {
    const s = await startTestServer({ 'webhook.shutdownDelayMs': 1500 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    onTestFinished(async () => {
      agent.destroy();
      await s.stop();
    });
    const before = await postH1(s.server.port, s.ca(), '/mutate', body, agent);
    expect(before.headers.connection).toBe('keep-alive');
    const [socket] = Object.values(agent.freeSockets).flat();
    expect(socket).toBeDefined();
    const socketClosed = new Promise<void>((r) => socket!.once('close', () => r()));
    const closed = s.server.close();
    // The API server's next review on its kept-alive connection, while we still serve.
    const during = await postH1(s.server.port, s.ca(), '/mutate', body, agent);
    expect(during.status).toBe(200);
    expectMutated(during.body);
    expect(during.headers.connection).toBe('close');
    // The server ends that connection itself, before the delay is over: an order, not a time
    // (#85 item 5), so that a slow machine cannot make it fail.
    const first = await Promise.race([
      socketClosed.then(() => 'the connection'),
      closed.then(() => 'the delay'),
    ]);
    expect(first).toBe('the connection');
    expect(Object.values(agent.freeSockets).flat()).toHaveLength(0);
    await closed;
  });
});
