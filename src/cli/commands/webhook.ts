// `erdma-smcr serve` (the webhook process) and `erdma-smcr review` (one AdmissionReview, offline).
import type { Command } from 'commander';
import { Option } from 'commander';
import { admit, type Endpoint } from '../../admission/handler.js';
import { decodeReview, encodeReview } from '../../admission/review.js';
import { StaticViewSource } from '../../cluster/view.js';
import type { Config } from '../../config/schema.js';
import { AppError } from '../../errors.js';
import { resolveView } from '../../check/check.js';
import type { CliIO } from '../io.js';

// Only what the command definitions and `review` need is imported here: `serve` and
// `certs generate` load their heavy modules when they run (see serve-run.ts).
type ConfigFor = (flags: Record<string, unknown>) => Readonly<Config>;

/** The offline cluster view from the configured profile and node list. */
export function offlineView(config: Readonly<Config>): StaticViewSource {
  return new StaticViewSource(offlineClusterView(config));
}

function offlineClusterView(config: Readonly<Config>): ReturnType<typeof resolveView> {
  return resolveView({
    ...(config.cluster.profile ? { profileFile: config.cluster.profile } : {}),
    ...(config.cluster.nodes ? { nodesFile: config.cluster.nodes } : {}),
  });
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

const int = (v: string | undefined): number | undefined =>
  v === undefined ? undefined : Number.parseInt(v, 10);

export function serveCommand(
  program: Command,
  io: CliIO,
  configFor: ConfigFor,
  setCode: (c: number) => void,
): void {
  program
    .command('serve')
    .description(
      'run the admission webhook (defaults: 127.0.0.1:8443, certificates generated into webhook-certs/)',
    )
    .option('--host <addr>', 'address to listen on')
    .option('--port <port>', 'HTTPS port')
    .option('--metrics-port <port>', 'plain-HTTP port for /metrics and probes')
    .option('--no-metrics', 'serve no metrics/probe port')
    .option('--cert-dir <dir>', 'directory holding tls.crt, tls.key (and ca.crt)')
    .option('--no-generate-certs', 'never generate certificates; fail when absent')
    .option('--profile <file>', 'offline cluster profile')
    .option('--nodes <file>', 'NodeList for the offline view')
    .addOption(
      new Option(
        '--cert-source <source>',
        'files (certDir) or secret (kept in a Secret with the caBundle)',
      ).choices(['files', 'secret']),
    )
    .addOption(
      new Option(
        '--cluster <source>',
        'offline (profile files) or live (watch nodes and the profile ConfigMap)',
      ).choices(['offline', 'live']),
    )
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
      const { runServe } = await import('../../admission/process.js');
      await runServe(config, io);
      setCode(0);
    });
}

interface ReviewOpts {
  profile?: string;
  nodes?: string;
  endpoint?: Endpoint;
  showPatch?: boolean;
}

export function reviewCommand(
  program: Command,
  io: CliIO,
  configFor: ConfigFor,
  setCode: (c: number) => void,
): void {
  program
    .command('review')
    .description(
      'run one AdmissionReview (JSON) through the webhook code and print the response (exit 0 allowed, 1 denied, 2 bad input)',
    )
    .argument('[file]', 'AdmissionReview JSON file, or - for stdin', '-')
    .option('--profile <file>', 'offline cluster profile')
    .option('--nodes <file>', 'NodeList for the offline view')
    .addOption(
      new Option(
        '--endpoint <name>',
        'mutate or validate (default: mutate for pods, validate otherwise)',
      ).choices(['mutate', 'validate']),
    )
    .option('--show-patch', 'also print the decoded JSON Patch on stderr')
    .action(async (file: string, opts: ReviewOpts) => {
      const config = configFor({ 'cluster.profile': opts.profile, 'cluster.nodes': opts.nodes });
      const text =
        file === '-'
          ? io.stdin()
          : await import('node:fs').then((fs) => {
              try {
                return fs.readFileSync(file, 'utf8');
              } catch (err) {
                throw new AppError(
                  'INPUT_UNREADABLE',
                  `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
                );
              }
            });
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw new AppError(
          'REVIEW_NOT_JSON',
          `${file === '-' ? '<stdin>' : file}: not JSON: ${(err as Error).message}`,
        );
      }
      const req = decodeReview(body);
      const endpoint = opts.endpoint ?? (req.kind.kind === 'Pod' ? 'mutate' : 'validate');
      const decision = admit(req, endpoint, offlineView(config).current(), config.policy);
      io.out(`${JSON.stringify(encodeReview(decision.response), null, 2)}\n`);
      if (opts.showPatch && decision.response.patch) {
        io.err(
          `${JSON.stringify(JSON.parse(Buffer.from(decision.response.patch, 'base64').toString()), null, 2)}\n`,
        );
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
  const certs = program
    .command('certs')
    .description('certificates for people who manage them themselves');
  certs
    .command('generate')
    .description(
      'write ca.crt, ca.key, tls.crt, tls.key for the webhook Service into a directory (keys 0600)',
    )
    .requiredOption('--service <name>', 'webhook Service name')
    .requiredOption('--namespace <ns>', 'namespace of the Service')
    .requiredOption('--out <dir>', 'output directory (existing certificates there are kept)')
    .option('--name <dns...>', 'extra DNS names or IPs')
    .option('--days <n>', 'serving certificate validity in days (CA: three times that)', '365')
    .action(async (opts: GenerateOpts) => {
      const [{ ensureLocalCerts }, { serviceNames }] = await Promise.all([
        import('../../certs/local.js'),
        import('../../certs/pki.js'),
      ]);
      const days = Number.parseInt(opts.days ?? '365', 10);
      if (!(days > 0))
        throw new AppError('USAGE', `--days must be a positive integer, got ${opts.days}`);
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
