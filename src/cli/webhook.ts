// `erdma-smcr serve` (the webhook process) and `erdma-smcr review` (one AdmissionReview, offline).
import { relative } from 'node:path';
import type { Command } from 'commander';
import { Option } from 'commander';
import { admit, type Endpoint } from '../admission/handler.js';
import { decodeReview, encodeReview } from '../admission/review.js';
import { startServer } from '../admission/server.js';
import { ensureLocalCerts } from '../certs/local.js';
import { StaticViewSource } from '../cluster/view.js';
import type { Config } from '../config/schema.js';
import { AppError } from '../errors.js';
import { createLogger } from '../log.js';
import { resolveView } from './check.js';
import type { CliIO } from './io.js';
import { runUntilSignal } from './signals.js';

type ConfigFor = (flags: Record<string, unknown>) => Readonly<Config>;

function offlineView(config: Readonly<Config>): StaticViewSource {
  return new StaticViewSource(
    resolveView({
      ...(config.cluster.profile ? { profileFile: config.cluster.profile } : {}),
      ...(config.cluster.nodes ? { nodesFile: config.cluster.nodes } : {}),
    }),
  );
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
      });
      const logger = createLogger(config.logLevel);
      logger.info({ config }, 'effective configuration');
      const w = config.webhook;
      const certs = w.generateCerts
        ? ensureLocalCerts({ dir: w.certDir, service: w.serviceName, namespace: w.namespace })
        : undefined;
      if (certs?.generated) logger.info({ dir: w.certDir }, 'generated a development CA and serving certificate');
      const paths = certs?.paths ?? { caCert: `${w.certDir}/ca.crt`, cert: `${w.certDir}/tls.crt`, key: `${w.certDir}/tls.key` };
      const server = await startServer({ config, views: offlineView(config), logger, keyPath: paths.key, certPath: paths.cert });
      io.out(banner(config, server.port, server.metricsPort, relative(process.cwd(), paths.caCert) || paths.caCert));
      await runUntilSignal(logger, 'shutting down', () => server.close());
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
