// The webhook server: the app (./app.ts) on its transport (./transport.ts), the serving
// certificate from one source kept current, a plain-HTTP port for metrics and probes, and a
// graceful shutdown that fails no admission.
import { AppError } from '../errors.js';
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { CertificateSource, KeyCert } from '../certs/source.js';
import type { ClusterViewSource } from '../cluster/view.js';
import type { Config } from '../config/schema.js';
import { listenFailure, startProbeServer, type ProbeServer } from '../util/probes.js';
import { buildApp } from './app.js';
import { BodyBudget } from './body.js';
import { ConnectionGuard, StreamGuard } from './guard.js';
import { WebhookMetrics } from './metrics.js';
import {
  Connections,
  enforceDeadlines,
  hookConnections,
  transportOptions,
  useSecureContext,
} from './transport.js';

export interface ServerOptions {
  readonly config: Readonly<Config>;
  readonly views: ClusterViewSource;
  readonly logger: FastifyBaseLogger;
  readonly metrics?: WebhookMetrics;
  /** The serving certificate: files watched, or a Secret we keep (src/certs/source.ts). */
  readonly certificates: CertificateSource;
}

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly port: number;
  readonly metricsPort: number | undefined;
  readonly metrics: WebhookMetrics;
  /** Graceful shutdown: not ready, stop accepting, finish in-flight, close idle connections. */
  close(): Promise<void>;
}

/** Swaps in each new serving pair, with its metrics and log lines. */
function followCertificates(
  server: Http2SecureServer,
  o: ServerOptions,
  metrics: WebhookMetrics,
): void {
  const served = (p: KeyCert): void => void metrics.certExpiry.set(p.notAfter.getTime() / 1000);
  served(o.certificates.current());
  o.certificates.subscribe(
    (pair) => {
      useSecureContext(server, pair);
      served(pair);
      metrics.certReloads.inc({ result: 'ok' });
      o.logger.info({ notAfter: pair.notAfter.toISOString() }, 'serving certificate reloaded');
    },
    (reason) => {
      metrics.certReloads.inc({ result: 'error' });
      o.logger.warn({ reason }, 'serving certificate not reloaded; keeping the previous one');
    },
  );
}

/** Starts the webhook; resolves once it listens. */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config, logger } = opts;
  const w = config.webhook;
  const metrics = opts.metrics ?? new WebhookMetrics();
  let stopping = false;
  const ready = (): string | undefined =>
    stopping ? 'shutting down' : opts.views.synced ? undefined : 'cluster view not synced yet';
  const bodyBudget = new BodyBudget(w.pendingBodyBytes);
  metrics.trackBodies(bodyBudget);
  const deps = {
    config,
    views: opts.views,
    metrics,
    logger,
    readiness: ready,
    bodyBudget,
    draining: () => stopping,
  };
  const app = buildApp(deps, transportOptions(opts.certificates.current(), w));
  const server = app.server as unknown as Http2SecureServer;
  const guard = new ConnectionGuard(w.maxConnections, w.headersTimeoutMs);
  const streams = new StreamGuard(w.maxStreams);
  metrics.trackConnections(guard, streams);
  enforceDeadlines(server, w, guard, streams);
  const conns = new Connections();
  hookConnections(server, conns);
  try {
    await app.listen({ host: w.host, port: w.port });
  } catch (err) {
    await app.close();
    throw listenFailure(
      err,
      `${w.host}:${w.port}`,
      '--port (webhook.port, ERDMA_SMCR_PORT)',
      '--host (webhook.host, ERDMA_SMCR_HOST)',
    );
  }
  const port = (app.server.address() as AddressInfo).port;
  if (w.metricsEnabled && w.metricsPort !== 0 && w.metricsPort === w.port) {
    await app.close();
    throw new AppError(
      'LISTEN_FAILED',
      `--metrics-port ${w.metricsPort} is the webhook's --port too: give the metrics and probes a port of their own (webhook.metricsPort, ERDMA_SMCR_METRICS_PORT), or pass --no-metrics`,
    );
  }
  let probes: ProbeServer | undefined;
  try {
    probes = w.metricsEnabled
      ? await startProbeServer(w.metricsHost, w.metricsPort, { ready, metrics: metrics.registry })
      : undefined;
  } catch (err) {
    // Never keep serving without the port the probes and Prometheus expect.
    await app.close();
    throw listenFailure(
      err,
      `${w.metricsHost}:${w.metricsPort}`,
      '--metrics-port (webhook.metricsPort, ERDMA_SMCR_METRICS_PORT), or pass --no-metrics',
      'webhook.metricsHost (ERDMA_SMCR_METRICS_HOST)',
    );
  }
  followCertificates(server, opts, metrics);

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
      if (w.shutdownDelayMs > 0) {
        // Serve as usual (new connections too) until Endpoints and kube-proxy have let go of us.
        logger.info(
          { ms: w.shutdownDelayMs },
          'not ready; still serving while endpoints drop this pod',
        );
        await new Promise((r) => setTimeout(r, w.shutdownDelayMs));
      }
      conns.closing = true;
      const grace = setTimeout(() => {
        logger.warn('shutdown grace period over; closing remaining connections');
        conns.destroyAll();
      }, w.shutdownGraceMs);
      grace.unref();
      const done = app.close();
      conns.closeSessions();
      await done;
      clearTimeout(grace);
      await probes?.close();
      await opts.certificates.close();
      await opts.views.close();
    })();
    return closing;
  };
  return { app, port, metricsPort: probes?.port, metrics, close };
}
