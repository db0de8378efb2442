// `erdma-smcr serve` (the webhook process) and `erdma-smcr review` (one AdmissionReview, offline).
import { relative } from 'node:path';
import type { Command } from 'commander';
import { Option } from 'commander';
import { admit, type Endpoint } from '../admission/handler.js';
import { decodeReview, encodeReview } from '../admission/review.js';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { WebhookMetrics } from '../admission/metrics.js';
import { startServer, type RunningServer, type ServerOptions } from '../admission/server.js';
import { KubeSecretStore, SecretCertManager, WebhookConfigTarget } from '../certs/bootstrap.js';
import { certPaths, ensureLocalCerts } from '../certs/local.js';
import { serviceNames } from '../certs/pki.js';
import type { RotationPolicy } from '../certs/rotation.js';
import { loadKubeConfig } from '../cluster/kube.js';
import { LiveViewSource } from '../cluster/live.js';
import { DEFAULT_PROFILE, loadProfileFile, type Profile } from '../cluster/profile.js';
import { StaticViewSource, type ClusterViewSource } from '../cluster/view.js';
import type { Config } from '../config/schema.js';
import { AppError } from '../errors.js';
import { createLogger } from '../log.js';
import { resolveView } from './check.js';
import type { CliIO } from './io.js';
import { runUntilSignal } from './signals.js';

type ConfigFor = (flags: Record<string, unknown>) => Readonly<Config>;

function offlineView(config: Readonly<Config>): StaticViewSource {
  return new StaticViewSource(offlineClusterView(config));
}

function offlineClusterView(config: Readonly<Config>): ReturnType<typeof resolveView> {
  return resolveView({
    ...(config.cluster.profile ? { profileFile: config.cluster.profile } : {}),
    ...(config.cluster.nodes ? { nodesFile: config.cluster.nodes } : {}),
  });
}

function baseProfile(config: Readonly<Config>): Profile {
  return config.cluster.profile ? loadProfileFile(config.cluster.profile) : DEFAULT_PROFILE;
}

/** The policy's cluster view: offline (profile files) or live (informers). */
async function viewSource(config: Readonly<Config>, kc: () => KubeConfig, logger: Logger, metrics: WebhookMetrics): Promise<ClusterViewSource> {
  if (config.cluster.source === 'offline') return offlineView(config);
  const live = new LiveViewSource({
    kubeConfig: kc(),
    namespace: config.webhook.namespace,
    configMap: config.cluster.configMap,
    baseProfile: baseProfile(config),
    logger,
    onStale: (stale) => metrics.viewStale.set(stale ? 1 : 0),
  });
  // Not ready until synced (readiness says so); serving meanwhile warns instead of guessing nodes.
  if (!(await live.start(5_000))) logger.warn('cluster view not synced yet; /readyz stays 503 until it is');
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

interface Certificates {
  readonly start: Partial<Pick<ServerOptions, 'keyPath' | 'certPath' | 'certificate'>>;
  readonly caPath: string;
  attach(server: RunningServer): void;
  close(): Promise<void>;
}

function fileCertificates(config: Readonly<Config>, logger: Logger): Certificates {
  const w = config.webhook;
  const certs = w.generateCerts ? ensureLocalCerts({ dir: w.certDir, service: w.serviceName, namespace: w.namespace, extraNames: w.extraNames }) : undefined;
  if (certs?.generated) logger.info({ dir: w.certDir }, 'generated a development CA and serving certificate');
  const paths = certs?.paths ?? certPaths(w.certDir);
  return { start: { keyPath: paths.key, certPath: paths.cert }, caPath: relative(process.cwd(), paths.caCert) || paths.caCert, attach: () => {}, close: async () => {} };
}

async function secretCertificates(config: Readonly<Config>, kc: KubeConfig, logger: Logger, metrics: WebhookMetrics): Promise<Certificates> {
  const w = config.webhook;
  let server: RunningServer | undefined;
  let pending: { key: string; cert: string } | undefined;
  const targets = [
    ...(w.mutatingWebhookConfiguration ? [new WebhookConfigTarget(kc, 'mutating', w.mutatingWebhookConfiguration)] : []),
    ...(w.validatingWebhookConfiguration ? [new WebhookConfigTarget(kc, 'validating', w.validatingWebhookConfiguration)] : []),
  ];
  const manager = new SecretCertManager({
    kubeConfig: kc,
    namespace: w.namespace,
    secretName: w.secretName,
    store: new KubeSecretStore(kc, w.namespace, w.secretName),
    targets,
    policy: rotationPolicy(w),
    logger,
    checkIntervalMs: w.certCheckIntervalSeconds * 1000,
    onStep: (step) => metrics.certSteps.inc({ step }),
    onServing: (key, cert) => (server ? server.applyCertificate(key, cert) : (pending = { key, cert })),
  });
  const pair = await manager.start();
  return {
    start: { certificate: pair },
    caPath: `<ca.crt of Secret ${w.namespace}/${w.secretName}>`,
    attach: (s) => {
      server = s;
      if (pending) s.applyCertificate(pending.key, pending.cert);
    },
    close: () => manager.close(),
  };
}

function banner(config: Readonly<Config>, port: number, metricsPort: number | undefined, caPath: string): string {
  const host = config.webhook.host === '0.0.0.0' ? '127.0.0.1' : config.webhook.host;
  const svc = `${config.webhook.serviceName}.${config.webhook.namespace}.svc`;
  return [
    `erdma-smcr webhook listening on https://${host}:${port} (/mutate, /validate; HTTP/2 and HTTP/1.1)`,
    metricsPort !== undefined ? `metrics and probes on http://${config.webhook.metricsHost}:${metricsPort}/metrics, /healthz, /readyz` : '',
    '',
    'Send it a pod the way the API server does:',
    `  curl --cacert ${caPath} --resolve ${svc}:${port}:${host} -H 'Content-Type: application/json' \\`,
    `       --data @docs/admission/pod-create-smcr.json https://${svc}:${port}/mutate`,
    'The same decision offline: erdma-smcr review docs/admission/pod-create-smcr.json',
    '',
  ]
    .filter((l, i, a) => l !== '' || a[i - 1] !== '')
    .join('\n');
}

interface ServeOpts {
  host?: string;
  port?: string;
  metricsPort?: string;
  metrics?: boolean;
  certDir?: string;
  generateCerts?: boolean;
  profile?: string;
  nodes?: string;
  certSource?: string;
  cluster?: string;
  kubeconfig?: string;
}

const int = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number.parseInt(v, 10));

export function serveCommand(program: Command, io: CliIO, configFor: ConfigFor, setCode: (c: number) => void): void {
  program
    .command('serve')
    .description('run the admission webhook (defaults: 127.0.0.1:8443, certificates generated into webhook-certs/)')
    .option('--host <addr>', 'address to listen on')
    .option('--port <port>', 'HTTPS port')
    .option('--metrics-port <port>', 'plain-HTTP port for /metrics and probes')
    .option('--no-metrics', 'serve no metrics/probe port')
    .option('--cert-dir <dir>', 'directory holding tls.crt, tls.key (and ca.crt)')
    .option('--no-generate-certs', 'never generate certificates; fail when absent')
    .option('--profile <file>', 'offline cluster profile')
    .option('--nodes <file>', 'NodeList for the offline view')
    .addOption(new Option('--cert-source <source>', 'files (certDir) or secret (kept in a Secret with the caBundle)').choices(['files', 'secret']))
    .addOption(new Option('--cluster <source>', 'offline (profile files) or live (watch nodes and the profile ConfigMap)').choices(['offline', 'live']))
    .option('--kubeconfig <file>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)')
    .action(async (opts: ServeOpts) => {
      const config = configFor({
        'webhook.host': opts.host,
        'webhook.port': int(opts.port),
        'webhook.metricsPort': int(opts.metricsPort),
        'webhook.metricsEnabled': opts.metrics === false ? false : undefined,
        'webhook.certDir': opts.certDir,
        'webhook.generateCerts': opts.generateCerts === false ? false : undefined,
        'cluster.profile': opts.profile,
        'cluster.nodes': opts.nodes,
        'webhook.certSource': opts.certSource,
        'cluster.source': opts.cluster,
        'cluster.kubeconfig': opts.kubeconfig,
      });
      const logger = createLogger(config.logLevel);
      logger.info({ config }, 'effective configuration');
      const metrics = new WebhookMetrics();
      let kc: KubeConfig | undefined;
      const kube = (): KubeConfig => (kc ??= loadKubeConfig(config.cluster.kubeconfig));
      const certs = config.webhook.certSource === 'secret' ? await secretCertificates(config, kube(), logger, metrics) : fileCertificates(config, logger);
      const views = await viewSource(config, kube, logger, metrics);
      const server = await startServer({ config, views, logger, metrics, ...certs.start });
      certs.attach(server);
      io.out(banner(config, server.port, server.metricsPort, certs.caPath));
      await runUntilSignal(logger, 'shutting down', async () => {
        await server.close();
        await certs.close();
      });
      setCode(0);
    });
}

interface ReviewOpts {
  profile?: string;
  nodes?: string;
  endpoint?: Endpoint;
  showPatch?: boolean;
}

export function reviewCommand(program: Command, io: CliIO, configFor: ConfigFor, setCode: (c: number) => void): void {
  program
    .command('review')
    .description('run one AdmissionReview (JSON) through the webhook code and print the response (exit 0 allowed, 1 denied, 2 bad input)')
    .argument('[file]', 'AdmissionReview JSON file, or - for stdin', '-')
    .option('--profile <file>', 'offline cluster profile')
    .option('--nodes <file>', 'NodeList for the offline view')
    .addOption(new Option('--endpoint <name>', 'mutate or validate (default: mutate for pods, validate otherwise)').choices(['mutate', 'validate']))
    .option('--show-patch', 'also print the decoded JSON Patch on stderr')
    .action(async (file: string, opts: ReviewOpts) => {
      const config = configFor({ 'cluster.profile': opts.profile, 'cluster.nodes': opts.nodes });
      const text = file === '-' ? io.stdin() : await import('node:fs').then((fs) => {
        try {
          return fs.readFileSync(file, 'utf8');
        } catch (err) {
          throw new AppError('INPUT_UNREADABLE', `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
      });
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw new AppError('REVIEW_NOT_JSON', `${file === '-' ? '<stdin>' : file}: not JSON: ${(err as Error).message}`);
      }
      const req = decodeReview(body);
      const endpoint = opts.endpoint ?? (req.kind.kind === 'Pod' ? 'mutate' : 'validate');
      const decision = admit(req, endpoint, offlineView(config).current(), config.policy);
      io.out(`${JSON.stringify(encodeReview(decision.response), null, 2)}\n`);
      if (opts.showPatch && decision.response.patch) {
        io.err(`${JSON.stringify(JSON.parse(Buffer.from(decision.response.patch, 'base64').toString()), null, 2)}\n`);
      }
      setCode(decision.response.allowed ? 0 : 1);
    });
}

interface GenerateOpts {
  service: string;
  namespace: string;
  out: string;
  name?: string[];
  days?: string;
}

export function certsCommand(program: Command, io: CliIO, setCode: (c: number) => void): void {
  const certs = program.command('certs').description('certificates for people who manage them themselves');
  certs
    .command('generate')
    .description('write ca.crt, ca.key, tls.crt, tls.key for the webhook Service into a directory (keys 0600)')
    .requiredOption('--service <name>', 'webhook Service name')
    .requiredOption('--namespace <ns>', 'namespace of the Service')
    .requiredOption('--out <dir>', 'output directory (existing certificates there are kept)')
    .option('--name <dns...>', 'extra DNS names or IPs')
    .option('--days <n>', 'serving certificate validity in days (CA: three times that)', '365')
    .action((opts: GenerateOpts) => {
      const days = Number.parseInt(opts.days ?? '365', 10);
      if (!(days > 0)) throw new AppError('USAGE', `--days must be a positive integer, got ${opts.days}`);
      const { generated, paths } = ensureLocalCerts({
        dir: opts.out,
        service: opts.service,
        namespace: opts.namespace,
        extraNames: opts.name ?? [],
        validityDays: days,
        localhost: false,
      });
      const names = serviceNames(opts.service, opts.namespace, opts.name ?? []).join(', ');
      io.out(
        generated
          ? `wrote ${paths.caCert}, ${paths.cert}, ${paths.key} (and ca.key) for ${names}\n` +
              `caBundle for the webhook configurations: base64 -w0 ${paths.caCert}\n`
          : `${opts.out} already holds a CA and serving certificate; nothing written (remove them to regenerate)\n`,
      );
      setCode(0);
    });
}
