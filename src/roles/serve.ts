// The webhook process behind `erdma-smcr serve`, loaded only when serving: it brings fastify,
// prom-client and node-forge, which the other subcommands never need. The Kubernetes client
// (cluster/client.ts) is loaded only when the mode needs it: a live cluster view or certificates
// kept in a Secret.
import { isAbsolute, relative } from 'node:path';
import type { KubeClient } from '../cluster/client.js';
import type { Logger } from 'pino';
import { WebhookMetrics } from '../admission/metrics.js';
import { startServer } from '../admission/https-server.js';
import { certFilesPresent, certPaths, servingPairPresent } from '../certs/files.js';
import { FileCertificates, type CertificateSource } from '../certs/source.js';
import { serviceNames } from '../certs/x509.js';
import type { RotationPolicy } from '../certs/rotation.js';
import { DEFAULT_PROFILE, loadProfileFile, type Profile } from '../cluster/profile.js';
import type { ClusterViewSource } from '../cluster/view.js';
import type { Config } from '../config/schema.js';
import { createLogger } from '../util/log.js';
import { packagePath } from '../util/package.js';
import type { CliIO } from '../util/io.js';
import { runUntilSignal } from '../util/signals.js';
import { offlineView } from '../cluster/offline.js';

function baseProfile(config: Readonly<Config>): Profile {
  return config.cluster.profile ? loadProfileFile(config.cluster.profile) : DEFAULT_PROFILE;
}

/** The policy's cluster view: offline (profile files) or live (informers). */
async function viewSource(
  config: Readonly<Config>,
  kc: () => Promise<KubeClient>,
  logger: Logger,
  metrics: WebhookMetrics,
): Promise<ClusterViewSource> {
  if (config.cluster.source === 'offline') return offlineView(config);
  const { LiveViewSource } = await import('../cluster/live.js');
  const live = new LiveViewSource({
    client: await kc(),
    namespace: config.webhook.namespace,
    configMap: config.cluster.configMap,
    baseProfile: baseProfile(config),
    logger,
    onStale: (stale) => metrics.viewStale.set(stale ? 1 : 0),
  });
  // Not ready until synced (readiness says so); serving meanwhile warns instead of guessing nodes.
  if (!(await live.start(5_000)))
    logger.warn('cluster view not synced yet; /readyz stays 503 until it is');
  return live;
}

function rotationPolicy(w: Readonly<Config>['webhook']): RotationPolicy {
  return {
    names: serviceNames(w.serviceName, w.namespace, w.extraNames),
    caValidityMs: w.caValiditySeconds * 1000,
    certValidityMs: w.certValiditySeconds * 1000,
    promotionDelayMs: w.caPromotionDelaySeconds * 1000,
  };
}

/** The serving certificate's source, and where its CA is, for the banner. */
interface Certificates {
  readonly source: CertificateSource;
  readonly caPath: string;
}

async function fileCertificates(config: Readonly<Config>, logger: Logger): Promise<Certificates> {
  const w = config.webhook;
  // Making certificates loads node-forge: only when they are missing. A serving pair someone else
  // put there (cert-manager's files, say) is used as it is, never written over.
  const certs =
    w.generateCerts && !certFilesPresent(w.certDir) && !servingPairPresent(w.certDir)
      ? (await import('../certs/local.js')).ensureLocalCerts({
          dir: w.certDir,
          service: w.serviceName,
          namespace: w.namespace,
          extraNames: w.extraNames,
        })
      : undefined;
  if (certs?.generated)
    logger.info({ dir: w.certDir }, 'generated a development CA and serving certificate');
  const paths = certs?.paths ?? certPaths(w.certDir);
  return { source: new FileCertificates(paths.key, paths.cert), caPath: shown(paths.caCert) };
}

async function secretCertificates(
  config: Readonly<Config>,
  kc: KubeClient,
  logger: Logger,
  metrics: WebhookMetrics,
): Promise<Certificates> {
  const w = config.webhook;
  const { KubeSecretStore, SecretCertManager, WebhookConfigTarget } =
    await import('../certs/bootstrap.js');
  const targets = [
    ...(w.mutatingWebhookConfiguration
      ? [new WebhookConfigTarget(kc, 'mutating', w.mutatingWebhookConfiguration)]
      : []),
    ...(w.validatingWebhookConfiguration
      ? [new WebhookConfigTarget(kc, 'validating', w.validatingWebhookConfiguration)]
      : []),
  ];
  const manager = new SecretCertManager({
    client: kc,
    namespace: w.namespace,
    secretName: w.secretName,
    store: new KubeSecretStore(kc, w.namespace, w.secretName),
    targets,
    policy: rotationPolicy(w),
    logger,
    checkIntervalMs: w.certCheckIntervalSeconds * 1000,
    onStep: (step) => metrics.certSteps.inc({ step }),
  });
  await manager.start();
  return { source: manager, caPath: `<ca.crt of Secret ${w.namespace}/${w.secretName}>` };
}

/** A path as the user should type it: relative when under the working directory, else absolute. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

/** The sample review shipped with the package (docs/admission), wherever it is installed. */
const SAMPLE_REVIEW = packagePath('docs', 'admission', 'pod-create-smcr.json');

function banner(
  config: Readonly<Config>,
  port: number,
  metricsPort: number | undefined,
  caPath: string,
): string {
  // Bound to every interface: say so, and call it on loopback in the example.
  const all = config.webhook.host === '0.0.0.0';
  const host = all ? '127.0.0.1' : config.webhook.host;
  const svc = `${config.webhook.serviceName}.${config.webhook.namespace}.svc`;
  return [
    `erdma-smcr webhook listening on https://${config.webhook.host}:${port}${all ? ' (every interface)' : ''} (/mutate, /validate; HTTP/2 and HTTP/1.1)`,
    metricsPort !== undefined
      ? `metrics and probes on http://${config.webhook.metricsHost}:${metricsPort}/metrics, /healthz, /readyz`
      : '',
    '',
    'Send it a pod the way the API server does:',
    `  curl --cacert ${caPath} --resolve ${svc}:${port}:${host} -H 'Content-Type: application/json' \\`,
    `       --data @${shown(SAMPLE_REVIEW)} https://${svc}:${port}/mutate`,
    `The same decision offline: erdma-smcr review ${shown(SAMPLE_REVIEW)}`,
    '',
  ]
    .filter((l, i, a) => l !== '' || a[i - 1] !== '')
    .join('\n');
}

/** Runs the webhook until SIGTERM/SIGINT, then shuts down gracefully. */
export async function runServe(config: Readonly<Config>, io: CliIO): Promise<void> {
  const logger = createLogger(config.logLevel);
  logger.info({ config }, 'effective configuration');
  const metrics = new WebhookMetrics();
  let kc: Promise<KubeClient> | undefined;
  const kube = (): Promise<KubeClient> =>
    (kc ??= import('../cluster/kubeconfig.js').then((m) =>
      m.loadKubeClient(config.cluster.kubeconfig, io.env),
    ));
  const certs =
    config.webhook.certSource === 'secret'
      ? await secretCertificates(config, await kube(), logger, metrics)
      : await fileCertificates(config, logger);
  const views = await viewSource(config, kube, logger, metrics);
  let server;
  try {
    server = await startServer({ config, views, logger, metrics, certificates: certs.source });
  } catch (err) {
    // A port we cannot open ends the process cleanly: nothing left watching or running.
    await views.close();
    await certs.source.close();
    throw err;
  }
  io.out(banner(config, server.port, server.metricsPort, certs.caPath));
  await runUntilSignal(logger, 'shutting down', () => server.close());
}
