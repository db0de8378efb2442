// The webhook's transport, everything below the HTTP routes: TLS (1.2+, forward-secret AEAD
// suites, certificate swapped without a restart), HTTP/2 and HTTP/1.1 on one port, deadlines and
// caps on both protocols (./guard.ts), and the connection tracking a graceful shutdown needs.
import {
  constants as http2constants,
  type Http2SecureServer,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { FastifyHttp2SecureOptions } from 'fastify';
import type { KeyCert } from '../certs/source.js';
import type { Config } from '../config/schema.js';
import type { ConnectionGuard, StreamGuard } from './guard.js';

/**
 * Tracks connections so shutdown is quick and loses nothing.
 * - HTTP/1.1: `server.close()` closes idle keep-alive connections at once and leaves busy ones
 *   (for an HTTP/2 server with allowHTTP1 too since Node 20.12; package.json asks for 20.19,
 *   past 20.13, which stopped that change from checking connections on every event-loop tick). A response
 *   still being produced tells its client not to reuse the connection (Connection: close), so it
 *   closes after that response.
 * - HTTP/2: sessions get GOAWAY and finish their open streams. (fastify's own session tracking
 *   waits for a 'connect' event that server sessions never emit.)
 * - Every socket is kept for the end of the grace period.
 */
export class Connections {
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

export function hookConnections(server: Http2SecureServer, conns: Connections): void {
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

/**
 * The server's fastify options: HTTP/2 with HTTP/1.1 on the same TLS port, the pair to serve
 * first, and fastify's own HTTP/2 idle timeout.
 */
export function transportOptions(
  pair: KeyCert,
  w: Config['webhook'],
): FastifyHttp2SecureOptions<Http2SecureServer> {
  return {
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
  };
}

/** Serves `pair` from the next TLS handshake on. */
export function useSecureContext(server: Http2SecureServer, pair: KeyCert): void {
  server.setSecureContext({ key: pair.key, cert: pair.cert, ...TLS_POLICY });
}
