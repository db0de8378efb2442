// The webhook process: TLS (HTTP/2 and HTTP/1.1, TLS 1.2+), certificate reload without a restart,
// a plain-HTTP metrics/health port, and a graceful shutdown that fails no admission.
import type { FSWatcher } from 'node:fs';
import {
  constants as http2constants,
  type Http2SecureServer,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ClusterViewSource } from '../cluster/view.js';
import type { Config } from '../config/schema.js';
import { buildApp, metricsRoute, quietRequests } from './app.js';
import { BodyBudget } from './body.js';
import { ConnectionGuard, StreamGuard } from './guard.js';
import { checkKeyCert, loadKeyCert, watchDir, type KeyCert } from '../certs/files.js';
import { WebhookMetrics } from './metrics.js';

export interface ServerOptions {
  readonly config: Readonly<Config>;
  readonly views: ClusterViewSource;
  readonly logger: FastifyBaseLogger;
  readonly metrics?: WebhookMetrics;
  /** Paths of the serving key and certificate, watched for changes (files mode)... */
  readonly keyPath?: string;
  readonly certPath?: string;
  /** ...or the pair itself (Secret mode: the certificate manager calls applyCertificate on changes). */
  readonly certificate?: { readonly key: string; readonly cert: string };
}

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly port: number;
  readonly metricsPort: number | undefined;
  readonly metrics: WebhookMetrics;
  /** Re-reads the certificate files now; false (keeping the old pair) when they do not load. */
  reloadCertificates(): boolean;
  /** Serves this pair from the next handshake on; false (keeping the old pair) when it does not load. */
  applyCertificate(key: string, cert: string): boolean;
  /** Graceful shutdown: not ready, stop accepting, finish in-flight, close idle connections. */
  close(): Promise<void>;
}

/**
 * Tracks connections so shutdown is quick and loses nothing.
 * - HTTP/1.1: `server.close()` closes idle keep-alive connections at once and leaves busy ones
 *   (for an HTTP/2 server with allowHTTP1 too since Node 20.12; package.json asks for 20.13,
 *   which stopped that change from checking connections on every event-loop tick). A response
 *   still being produced tells its client not to reuse the connection (Connection: close), so it
 *   closes after that response.
 * - HTTP/2: sessions get GOAWAY and finish their open streams. (fastify's own session tracking
 *   waits for a 'connect' event that server sessions never emit.)
 * - Every socket is kept for the end of the grace period.
 */
class Connections {
  private readonly all = new Set<Socket>();
  private readonly sessions = new Set<ServerHttp2Session>();
  closing = false;

  trackSession(session: ServerHttp2Session): void {
    this.sessions.add(session);
    session.once('close', () => this.sessions.delete(session));
    if (this.closing) session.close();
  }

  track(socket: TLSSocket): void {
    this.all.add(socket);
    socket.once('close', () => this.all.delete(socket));
  }

  closeSessions(): void {
    for (const session of this.sessions) session.close();
  }

  destroyAll(): void {
    for (const socket of this.all) socket.destroy();
  }
}

function hookConnections(app: FastifyInstance, conns: Connections): void {
  const server = app.server as unknown as Http2SecureServer;
  server.on('secureConnection', (s: TLSSocket) => conns.track(s));
  server.on('session', (s: ServerHttp2Session) => conns.trackSession(s));
}

/**
 * TLS 1.2+ with forward-secret AEAD suites only: the ECDHE AES-GCM and ChaCha20-Poly1305 suites
 * that the Kubernetes API server's recommended list keeps (no CBC, no SHA-1, no static RSA).
 * The TLS 1.3 suites are named too: a list without them would cap Node at TLS 1.2.
 */
export const TLS_POLICY = {
  minVersion: 'TLSv1.2',
  ciphers: [
    'TLS_AES_128_GCM_SHA256',
    'TLS_AES_256_GCM_SHA384',
    'TLS_CHACHA20_POLY1305_SHA256',
    'ECDHE-ECDSA-AES128-GCM-SHA256',
    'ECDHE-RSA-AES128-GCM-SHA256',
    'ECDHE-ECDSA-AES256-GCM-SHA384',
    'ECDHE-RSA-AES256-GCM-SHA384',
    'ECDHE-ECDSA-CHACHA20-POLY1305',
    'ECDHE-RSA-CHACHA20-POLY1305',
  ].join(':'),
  honorCipherOrder: true,
} as const;

/** The API server opens few streams per connection; nghttp2 would otherwise allow 2^32-1. */
const MAX_STREAMS_PER_SESSION = 16;

/** Node's HTTP/1.1 deadline fields, which Http2SecureServer with allowHTTP1 honours once set. */
interface Http1Deadlines {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
}

/**
 * Deadlines on both protocols (fastify applies its timeouts to HTTP/1 servers only).
 * - HTTP/1.1: Node's own headersTimeout/requestTimeout (408 and close) and keepAliveTimeout;
 *   they must be set before listen(), when Node starts checking connections.
 * - HTTP/2: a session must open its first stream within headersTimeoutMs; every stream, body
 *   included, must end within requestTimeoutMs (a trickled body keeps the session busy, so the
 *   session's idle timeout alone never fires); idle sessions close after idleTimeoutMs (fastify's
 *   http2SessionTimeout).
 */
export function enforceDeadlines(
  server: Http2SecureServer,
  w: Config['webhook'],
  guard: ConnectionGuard,
  streams: StreamGuard,
): void {
  const h1 = server as unknown as Http1Deadlines;
  h1.headersTimeout = w.headersTimeoutMs;
  h1.requestTimeout = w.requestTimeoutMs;
  h1.keepAliveTimeout = w.idleTimeoutMs;
  h1.connectionsCheckingInterval = Math.min(1000, w.headersTimeoutMs);
  // Node starts its header clock at a request's first byte, so a connection that sends nothing
  // would stay open: the guard gives each one headersTimeoutMs for its first request (or HTTP/2
  // stream), and caps open connections (guard.ts says which it closes first). It counts each
  // connection's requests in flight, so an idle one can be told from a busy one.
  server.on('connection', (socket: Socket) => guard.accept(socket));
  server.on('secureConnection', (socket: TLSSocket) => guard.secured(socket));
  server.on(
    'request',
    (
      req: { httpVersionMajor: number; socket: unknown },
      res: { writableFinished: boolean; once(e: 'close', f: () => void): void },
    ) => {
      if (req.httpVersionMajor !== 1) return;
      guard.started(req.socket);
      res.once('close', () => guard.finished(req.socket, res.writableFinished));
    },
  );
  server.on('stream', (stream: ServerHttp2Stream) => {
    // The session's socket is a proxy that reads through to the TLS socket's own properties.
    const socket = stream.session?.socket;
    guard.started(socket);
    streams.add(stream);
    const deadline = setTimeout(
      () => stream.close(http2constants.NGHTTP2_CANCEL),
      w.requestTimeoutMs,
    );
    deadline.unref();
    stream.once('close', () => {
      clearTimeout(deadline);
      guard.finished(socket, stream.writableFinished);
    });
  });
}

async function startMetricsServer(
  opts: ServerOptions,
  metrics: WebhookMetrics,
  ready: () => string,
): Promise<FastifyInstance | undefined> {
  const { metricsPort, metricsHost, metricsEnabled } = opts.config.webhook;
  if (!metricsEnabled) return undefined;
  const app = Fastify({
    loggerInstance: opts.logger,
    logController: quietRequests(),
  }) as unknown as FastifyInstance;
  metricsRoute(app, metrics);
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_r, reply) => {
    const reason = ready();
    return reason ? reply.code(503).send({ status: 'not ready', reason }) : { status: 'ready' };
  });
  await app.listen({ host: metricsHost, port: metricsPort });
  return app;
}

/** Starts the webhook; resolves once it listens. */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config, logger } = opts;
  const metrics = opts.metrics ?? new WebhookMetrics();
  const { keyPath, certPath } = opts;
  const fromFiles = (): KeyCert => {
    if (keyPath === undefined || certPath === undefined)
      throw new Error('no certificate files configured');
    return loadKeyCert(keyPath, certPath);
  };
  let pair: KeyCert = opts.certificate
    ? checkKeyCert(opts.certificate.key, opts.certificate.cert)
    : fromFiles();
  metrics.certExpiry.set(pair.notAfter.getTime() / 1000);
  const conns = new Connections();
  let stopping = false;
  const ready = (): string =>
    stopping ? 'shutting down' : opts.views.synced ? '' : 'cluster view not synced yet';
  const w = config.webhook;
  const bodyBudget = new BodyBudget(w.pendingBodyBytes);
  metrics.trackBodies(bodyBudget);
  const app = buildApp(
    {
      config,
      views: opts.views,
      metrics,
      logger,
      readiness: ready,
      serveMetrics: false,
      bodyBudget,
      draining: () => stopping,
    },
    {
      http2: true,
      https: {
        allowHTTP1: true,
        key: pair.key,
        cert: pair.cert,
        ...TLS_POLICY,
        // TCP_NODELAY, as Node's plain HTTP server and Go's servers set it: the TLS server does
        // not, and with Nagle's algorithm on, a response written while the client's delayed ACK
        // of the previous one is pending waited up to 40 ms (p99 of 41-63 ms at 500 req/s).
        noDelay: true,
        handshakeTimeout: w.headersTimeoutMs,
        settings: { maxConcurrentStreams: MAX_STREAMS_PER_SESSION },
      },
      // A request that arrives on a kept-alive connection while we close is still served.
      return503OnClosing: false,
      http2SessionTimeout: w.idleTimeoutMs,
    } as object,
  );
  const guard = new ConnectionGuard(w.maxConnections, w.headersTimeoutMs);
  const streams = new StreamGuard(w.maxStreams);
  metrics.trackConnections(guard, streams);
  enforceDeadlines(app.server as unknown as Http2SecureServer, w, guard, streams);
  hookConnections(app, conns);
  await app.listen({ host: config.webhook.host, port: config.webhook.port });
  const port = (app.server.address() as AddressInfo).port;

  const useCertificate = (load: () => KeyCert): boolean => {
    try {
      const next = load();
      if (next.cert === pair.cert && next.key === pair.key) return true;
      (app.server as unknown as Http2SecureServer).setSecureContext({
        key: next.key,
        cert: next.cert,
        ...TLS_POLICY,
      });
      pair = next;
      metrics.certReloads.inc({ result: 'ok' });
      metrics.certExpiry.set(pair.notAfter.getTime() / 1000);
      logger.info({ notAfter: pair.notAfter.toISOString() }, 'serving certificate reloaded');
      return true;
    } catch (err) {
      metrics.certReloads.inc({ result: 'error' });
      logger.warn(
        { reason: (err as Error).message },
        'serving certificate not reloaded; keeping the previous one',
      );
      return false;
    }
  };
  const reloadCertificates = (): boolean => useCertificate(fromFiles);
  const applyCertificate = (key: string, cert: string): boolean =>
    useCertificate(() => checkKeyCert(key, cert));
  const files =
    keyPath !== undefined && certPath !== undefined && !opts.certificate ? [keyPath, certPath] : [];
  const watchers: FSWatcher[] = [
    ...new Set(files.map((p) => p.replace(/\/[^/]+$/, '') || '.')),
  ].map((dir) => watchDir(dir, () => reloadCertificates()));

  const metricsApp = await startMetricsServer(opts, metrics, ready);
  const metricsPort = metricsApp ? (metricsApp.server.address() as AddressInfo).port : undefined;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      // /readyz fails from now on, and every HTTP/1.1 response says Connection: close. The API
      // server calls webhooks over HTTP/1.1 and keeps idle connections: one we closed while idle
      // could be the one it just sent a review on, and it does not retry a POST, so that pod
      // would be admitted unmutated (failurePolicy: Ignore). Closing each connection after a
      // response instead moves the API server to new connections, which the Service routes to
      // the other replicas once kube-proxy has let go of us.
      stopping = true;
      if (config.webhook.shutdownDelayMs > 0) {
        // Serve as usual (new connections too) until Endpoints and kube-proxy have let go of us.
        logger.info(
          { ms: config.webhook.shutdownDelayMs },
          'not ready; still serving while endpoints drop this pod',
        );
        await new Promise((r) => setTimeout(r, config.webhook.shutdownDelayMs));
      }
      conns.closing = true;
      for (const w of watchers) w.close();
      const grace = setTimeout(() => {
        logger.warn('shutdown grace period over; closing remaining connections');
        conns.destroyAll();
      }, config.webhook.shutdownGraceMs);
      grace.unref();
      const done = app.close();
      conns.closeSessions();
      await done;
      clearTimeout(grace);
      await metricsApp?.close();
      await opts.views.close();
    })();
    return closing;
  };
  return { app, port, metricsPort, metrics, reloadCertificates, applyCertificate, close };
}
