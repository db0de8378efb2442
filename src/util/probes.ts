// Liveness, readiness and metrics, as every process of ours answers them: `/healthz` (200 while
// the process runs), `/readyz` (200, or 503 with the reason), `/metrics` (Prometheus text). One
// answer function, served by the webhook's TLS app (fastify) and by a small plain-HTTP server on
// the metrics ports of the webhook and the agent.
import { AppError } from '../errors.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Why the process is not ready, or undefined when it is. */
export type Readiness = () => string | undefined;

export interface Probes {
  readonly ready: Readiness;
  /** Serves /metrics too (a prom-client Registry). */
  readonly metrics?: { readonly contentType: string; metrics(): Promise<string> };
}

export interface ProbeAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

const json = (status: number, value: unknown): ProbeAnswer => ({
  status,
  contentType: 'application/json; charset=utf-8',
  body: JSON.stringify(value),
});

/** The answer to a GET of `path`, or undefined when it is not a probe path. */
export async function probeAnswer(path: string, p: Probes): Promise<ProbeAnswer | undefined> {
  switch (path) {
    case '/healthz':
      return json(200, { status: 'ok' });
    case '/readyz': {
      const reason = p.ready();
      return reason === undefined
        ? json(200, { status: 'ready' })
        : json(503, { status: 'not ready', reason });
    }
    case '/metrics':
      return p.metrics
        ? { status: 200, contentType: p.metrics.contentType, body: await p.metrics.metrics() }
        : undefined;
    default:
      return undefined;
  }
}

/** The routes on a fastify app (the webhook's TLS port). */
export function probeRoutes(
  app: {
    get(path: string, handler: (req: unknown, reply: ProbeReply) => Promise<unknown>): unknown;
  },
  p: Probes,
): void {
  for (const path of ['/healthz', '/readyz', ...(p.metrics ? ['/metrics'] : [])]) {
    app.get(path, async (_req, reply) => {
      const a = (await probeAnswer(path, p))!;
      return reply.code(a.status).type(a.contentType).send(a.body);
    });
  }
}

interface ProbeReply {
  code(status: number): ProbeReply;
  type(contentType: string): ProbeReply;
  send(body: string): unknown;
}

export interface ProbeServer {
  readonly port: number;
  close(): Promise<void>;
}

/** A plain-HTTP server answering only the probes (GET and HEAD); 404 for anything else. */
const LISTEN_WHY: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the address is in use by another process',
  EADDRNOTAVAIL: 'this host has no such address',
  EACCES: 'not permitted (ports below 1024 need privileges)',
  ENOTFOUND: 'the host name does not resolve',
};

/** Failures that are the host's, not the port's. */
const HOST_CODES = new Set(['EADDRNOTAVAIL', 'ENOTFOUND']);

/**
 * A listen() failure as one line naming the address and the setting to change (LISTEN_FAILED):
 * the host's (`hostSetting`) for an address this host lacks or a name that does not resolve, the
 * port's (`setting`) otherwise; any other error as it is.
 */
export function listenFailure(
  err: unknown,
  address: string,
  setting: string,
  hostSetting?: string,
): unknown {
  const code = (err as NodeJS.ErrnoException)?.code ?? '';
  const why = LISTEN_WHY[code];
  const change = hostSetting && HOST_CODES.has(code) ? hostSetting : setting;
  return why
    ? new AppError('LISTEN_FAILED', `cannot listen on ${address}: ${why}; change ${change}`)
    : err;
}

export async function startProbeServer(
  host: string,
  port: number,
  p: Probes,
): Promise<ProbeServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const answer =
      method === 'GET' || method === 'HEAD' ? probeAnswer(path, p) : Promise.resolve(undefined);
    answer.then(
      (a) => {
        const out = a ?? json(404, { status: 'not found' });
        res.writeHead(out.status, { 'content-type': out.contentType });
        res.end(method === 'HEAD' ? undefined : out.body);
      },
      () => {
        res.writeHead(500).end();
      },
    );
  });
  // A scrape or a probe is a single short request: no slow client may hold the port.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
