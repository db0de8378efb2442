// The webhook's transport under slow and hostile clients, over real TLS on loopback: header, body
// and idle deadlines on HTTP/1.1 and HTTP/2, the budget of unfinished bodies, and the TLS suites.
import { Agent } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smcrReview } from '../../helpers/reviews.js';
import {
  h2Session,
  postH1,
  postH2,
  SNI,
  startTestServer,
  type TestServer,
} from '../../helpers/tls.js';

const HEADERS_MS = 600;
const REQUEST_MS = 1500;
const IDLE_MS = 800;
const BODY_LIMIT = 256 * 1024;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    'webhook.headersTimeoutMs': HEADERS_MS,
    'webhook.requestTimeoutMs': REQUEST_MS,
    'webhook.idleTimeoutMs': IDLE_MS,
    'webhook.bodyLimit': BODY_LIMIT,
    'webhook.pendingBodyBytes': 2 * BODY_LIMIT,
  });
});
afterAll(() => t.stop());

const review = JSON.stringify(smcrReview('pod-create'));
const open = new Set<Socket>();
afterAll(() => {
  for (const s of open) s.destroy();
});

function tlsTo(alpn: string, extra: ConnectionOptions = {}): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect(
      {
        host: '127.0.0.1',
        port: t.server.port,
        ca: t.ca(),
        servername: SNI,
        ALPNProtocols: [alpn],
        ...extra,
      },
      () => resolve(s),
    );
    open.add(s);
    s.once('error', reject);
  });
}

/** Milliseconds until the server closes s (rejects after `within`). */
function closedAfter(s: Socket, within: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after ${within} ms`)), within);
    s.on('error', () => undefined);
    s.resume(); // read what the server sends (an HTTP/2 SETTINGS frame), or its EOF waits behind it
    s.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
  });
}

function trickle(
  s: { write: (b: string) => unknown; destroyed?: boolean },
  every: number,
): NodeJS.Timeout {
  const timer = setInterval(() => {
    if (s.destroyed) clearInterval(timer);
    else s.write(' ');
  }, every);
  return timer;
}

describe('deadlines on HTTP/1.1', () => {
  it('closes a kept-alive connection once it has been idle for idleTimeoutMs', async () => {
    const s = await tlsTo('http/1.1');
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.write(
      `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(review)}\r\n\r\n${review}`,
    );
    const ms = await closedAfter(s, IDLE_MS + 3000);
    expect(got).toMatch(/^HTTP\/1\.1 200/);
    expect(ms).toBeGreaterThanOrEqual(IDLE_MS - 100);
  });

  it('closes a TLS connection that never sends a request', async () => {
    const s = await tlsTo('http/1.1');
    expect(await closedAfter(s, HEADERS_MS + 3000)).toBeGreaterThanOrEqual(HEADERS_MS - 100);
  });

  it('answers 408 and closes when a body trickles in past requestTimeoutMs', async () => {
    const s = await tlsTo('http/1.1');
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.write(
      `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
    );
    const timer = trickle(s, 100);
    try {
      expect(await closedAfter(s, REQUEST_MS + 3000)).toBeGreaterThanOrEqual(REQUEST_MS - 200);
    } finally {
      clearInterval(timer);
    }
    expect(got).toMatch(/^HTTP\/1\.1 408/);
  });
});

describe('deadlines on HTTP/2 and TLS', () => {
  it('closes a TCP connection that never starts the TLS handshake', async () => {
    const s = netConnect(t.server.port, '127.0.0.1');
    open.add(s);
    expect(await closedAfter(s, HEADERS_MS + 3000)).toBeGreaterThanOrEqual(HEADERS_MS - 100);
  });

  it('closes an HTTP/2 connection that never opens a stream', async () => {
    const s = await tlsTo('h2');
    expect(await closedAfter(s, HEADERS_MS + 3000)).toBeGreaterThanOrEqual(HEADERS_MS - 100);
  });

  it('resets an HTTP/2 stream whose body trickles in past requestTimeoutMs, and the session serves others', async () => {
    const session = h2Session(t.server.port, t.ca());
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/mutate',
        'content-type': 'application/json',
      });
      stream.write('{');
      const timer = trickle(stream, 100);
      const started = Date.now();
      const code = await new Promise<number>((resolve) => {
        stream.on('error', () => undefined);
        stream.once('close', () => resolve(stream.rstCode ?? -1));
      });
      clearInterval(timer);
      expect(Date.now() - started).toBeGreaterThanOrEqual(REQUEST_MS - 200);
      expect(Date.now() - started).toBeLessThan(REQUEST_MS + 3000);
      expect(code).toBeGreaterThan(0);
      const next = await postH2(session, '/mutate', review);
      expect(next.status).toBe(200);
    } finally {
      session.destroy();
    }
  });
});

describe('memory held by unfinished bodies', () => {
  it('drops the oldest unfinished bodies once they hold pendingBodyBytes, and normal reviews still pass', async () => {
    const chunk = 'x'.repeat(200 * 1024);
    const slow: TLSSocket[] = [];
    const closed = [false, false, false, false, false];
    for (let i = 0; i < 5; i++) {
      const s = await tlsTo('http/1.1');
      s.on('error', () => undefined);
      s.once('close', () => (closed[i] = true));
      s.resume();
      s.write(
        `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${BODY_LIMIT - 10}\r\n\r\n${chunk}`,
      );
      slow.push(s);
      await new Promise((r) => setTimeout(r, 100));
    }
    const ok = await postH1(t.server.port, t.ca(), '/mutate', review);
    expect(ok.status).toBe(200);
    // 5 bodies of 200 KiB against a 512 KiB budget: the oldest ones went, the youngest stayed.
    expect(closed.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(closed[4]).toBe(false);
    const metrics = await t.server.metrics.registry.metrics();
    const pending = Number(/erdma_smcr_admission_pending_body_bytes (\d+)/.exec(metrics)?.[1]);
    expect(pending).toBeLessThanOrEqual(2 * BODY_LIMIT);
    expect(
      Number(/erdma_smcr_admission_dropped_bodies_total (\d+)/.exec(metrics)?.[1]),
    ).toBeGreaterThanOrEqual(3);
    for (const s of slow) s.destroy();
  });
});

describe('open connections', () => {
  it('evicts the oldest connections that never got a response once maxConnections are open, and keeps proven ones', async () => {
    const small = await startTestServer({ 'webhook.maxConnections': 10 });
    try {
      const connect = (): Promise<TLSSocket> =>
        new Promise((ok, fail) => {
          const s = tlsConnect(
            {
              host: '127.0.0.1',
              port: small.server.port,
              ca: small.ca(),
              servername: SNI,
              ALPNProtocols: ['http/1.1'],
            },
            () => ok(s),
          );
          open.add(s);
          s.once('error', fail);
        });
      // A client that has had an answer (as the API server has) on a kept-alive connection.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      expect((await postH1(small.server.port, small.ca(), '/mutate', review, agent)).status).toBe(
        200,
      );
      const silent: TLSSocket[] = [];
      const closed: boolean[] = [];
      for (let i = 0; i < 15; i++) {
        const s = await connect();
        s.resume();
        s.on('error', () => undefined);
        closed.push(false);
        s.once('close', () => (closed[i] = true));
        silent.push(s);
      }
      await new Promise((r) => setTimeout(r, 200));
      // 1 proven + 15 silent against a cap of 10: the 6 oldest silent ones went, the rest stayed.
      expect(closed.slice(0, 6)).toEqual([true, true, true, true, true, true]);
      expect(closed.slice(6).every((c) => !c)).toBe(true);
      expect((await postH1(small.server.port, small.ca(), '/mutate', review, agent)).status).toBe(
        200,
      );
      expect((await postH1(small.server.port, small.ca(), '/mutate', review)).status).toBe(200);
      agent.destroy();
    } finally {
      await small.stop();
    }
  });
});

describe('open connections that have all been answered, and HTTP/2 streams', () => {
  it('closes the connection idle the longest past maxConnections, never one with a request in flight', async () => {
    const small = await startTestServer({ 'webhook.maxConnections': 10 });
    const agents: Agent[] = [];
    try {
      // 10 clients answered once each, kept alive; the first one then sends a slow review.
      for (let i = 0; i < 10; i++) {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        agents.push(agent);
        expect((await postH1(small.server.port, small.ca(), '/mutate', review, agent)).status).toBe(
          200,
        );
      }
      const sockets = agents.map((a) => Object.values(a.freeSockets).flat()[0]!);
      const closed = sockets.map(() => false);
      sockets.forEach((s, i) => {
        s.on('error', () => undefined);
        s.once('close', () => (closed[i] = true));
      });
      const inFlight = postH1(
        small.server.port,
        small.ca(),
        '/mutate',
        review,
        agents[0],
        async () => {
          // While agent 0's review is half sent, two more clients arrive, one after the other, and stay.
          for (let i = 0; i < 2; i++) {
            const agent = new Agent({ keepAlive: true, maxSockets: 1 });
            agents.push(agent);
            expect(
              (await postH1(small.server.port, small.ca(), '/mutate', review, agent)).status,
            ).toBe(200);
          }
          await new Promise((r) => setTimeout(r, 100));
        },
      );
      expect((await inFlight).status).toBe(200);
      // 12 connections against 10: agent 0's was busy, so agents 1 and 2 (idle the longest) went.
      expect(closed).toEqual([false, true, true, false, false, false, false, false, false, false]);
      const metrics = await (
        await fetch(`http://127.0.0.1:${small.server.metricsPort}/metrics`)
      ).text();
      expect(
        Number(/erdma_smcr_admission_connections (\d+)/.exec(metrics)?.[1]),
      ).toBeLessThanOrEqual(10);
    } finally {
      for (const a of agents) a.destroy();
      await small.stop();
    }
  });

  it('cancels the HTTP/2 streams open the longest past maxStreams, across sessions, and still answers new ones', async () => {
    const small = await startTestServer({ 'webhook.maxStreams': 20 });
    const sessions = [0, 1, 2].map(() => h2Session(small.server.port, small.ca()));
    try {
      const codes: (number | undefined)[] = [];
      for (const [s, session] of sessions.entries()) {
        session.on('error', () => undefined);
        for (let i = 0; i < 10; i++) {
          const stream = session.request({
            ':method': 'POST',
            ':path': '/mutate',
            'content-type': 'application/json',
          });
          stream.on('error', () => undefined);
          stream.once('close', () => (codes[s * 10 + i] = stream.rstCode));
          stream.write('{"a":');
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 200));
      // 30 stalled streams against a cap of 20: the first session's 10, opened first, went.
      expect(codes.slice(0, 10)).toEqual(Array(10).fill(8)); // NGHTTP2_CANCEL
      expect(codes.slice(10).filter((c) => c !== undefined)).toEqual([]);
      const fresh = h2Session(small.server.port, small.ca());
      expect((await postH2(fresh, '/mutate', review)).status).toBe(200);
      fresh.close();
      const metrics = await (
        await fetch(`http://127.0.0.1:${small.server.metricsPort}/metrics`)
      ).text();
      expect(
        Number(/erdma_smcr_admission_cancelled_streams_total (\d+)/.exec(metrics)?.[1]),
      ).toBeGreaterThanOrEqual(11);
    } finally {
      for (const s of sessions) s.destroy();
      await small.stop();
    }
  });
});

describe('TLS suites', () => {
  it.each([
    ['static RSA with CBC and SHA-1', 'AES128-SHA'],
    ['static RSA with GCM (no forward secrecy)', 'AES128-GCM-SHA256'],
    ['ECDHE with CBC and SHA-1', 'ECDHE-RSA-AES128-SHA'],
    ['ECDHE with CBC and SHA-384', 'ECDHE-RSA-AES256-SHA384'],
  ])('refuses a TLS 1.2 client that offers only %s', async (_name, cipher) => {
    await expect(
      tlsTo('http/1.1', { maxVersion: 'TLSv1.2', ciphers: `${cipher}:@SECLEVEL=0` }),
    ).rejects.toThrow();
  });

  it.each([
    ['ECDHE-RSA-AES128-GCM-SHA256'],
    ['ECDHE-RSA-AES256-GCM-SHA384'],
    ['ECDHE-RSA-CHACHA20-POLY1305'],
  ])('accepts TLS 1.2 with %s', async (cipher) => {
    const s = await tlsTo('http/1.1', { maxVersion: 'TLSv1.2', ciphers: cipher });
    expect(s.getCipher().standardName).toMatch(/^TLS_ECDHE_RSA_WITH_/);
    s.destroy();
  });

  it('negotiates TLS 1.3 by default', async () => {
    const s = await tlsTo('h2');
    expect(s.getProtocol()).toBe('TLSv1.3');
    s.destroy();
  });
});
