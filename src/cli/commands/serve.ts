// `erdma-smcr serve`: the admission webhook. The command only reads its flags: the process and
// its heavy modules (fastify, node-forge, prom-client) load when it runs (src/roles/serve.ts).
import { InvalidArgumentError, Option } from 'commander';
import type { CommandContext } from '../config.js';

interface ServeOpts {
  host?: string;
  port?: number;
  metricsPort?: number;
  metrics?: boolean;
  certDir?: string;
  generateCerts?: boolean;
  profile?: string;
  nodes?: string;
  certSource?: string;
  cluster?: string;
  kubeconfig?: string;
}

/** A port flag's value: a whole number 0-65535, or one line naming the flag (not the schema's words). */
function port(v: string): number {
  const n = /^\d{1,5}$/.test(v) ? Number(v) : NaN;
  if (!(n <= 65535)) throw new InvalidArgumentError('a port is a whole number from 0 to 65535.');
  return n;
}

export function serveCommand({ program, io, configFor, setCode }: CommandContext): void {
  program
    .command('serve')
    .description(
      'run the admission webhook (defaults: 127.0.0.1:8443, certificates generated into webhook-certs/)',
    )
    .option('--host <addr>', 'address to listen on (default: 127.0.0.1)')
    .addOption(new Option('--port <port>', 'HTTPS port (default: 8443)').argParser(port))
    .addOption(
      new Option(
        '--metrics-port <port>',
        'plain-HTTP port for /metrics and probes (default: 8080)',
      ).argParser(port),
    )
    .option('--no-metrics', 'serve no metrics/probe port')
    .option(
      '--cert-dir <dir>',
      'directory holding tls.crt, tls.key (and ca.crt) (default: webhook-certs)',
    )
    .option('--no-generate-certs', 'never generate certificates; fail when absent')
    .option('--profile <file>', 'offline cluster profile')
    .option('--nodes <file>', 'NodeList for the offline view')
    .addOption(
      new Option(
        '--cert-source <source>',
        'files (certDir) or secret (kept in a Secret with the caBundle) (default: files)',
      ).choices(['files', 'secret']),
    )
    .addOption(
      new Option(
        '--cluster <source>',
        'offline (profile files) or live (watch nodes and the profile ConfigMap) (default: offline)',
      ).choices(['offline', 'live']),
    )
    .option('--kubeconfig <file>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  erdma-smcr serve                                  on 127.0.0.1:8443, development certificates in webhook-certs/',
        '  erdma-smcr serve --profile examples/cluster-profile.yaml --port 9443',
        '  erdma-smcr serve --cluster live --cert-source secret   as the Deployment runs it',
        '',
      ].join('\n'),
    )
    .action(async (opts: ServeOpts) => {
      const config = await configFor({
        'webhook.host': opts.host,
        'webhook.port': opts.port,
        'webhook.metricsPort': opts.metricsPort,
        'webhook.metricsEnabled': opts.metrics === false ? false : undefined,
        'webhook.certDir': opts.certDir,
        'webhook.generateCerts': opts.generateCerts === false ? false : undefined,
        'cluster.profile': opts.profile,
        'cluster.nodes': opts.nodes,
        'webhook.certSource': opts.certSource,
        'cluster.source': opts.cluster,
        'cluster.kubeconfig': opts.kubeconfig,
      });
      const { runServe } = await import('../../roles/serve.js');
      await runServe(config, io);
      setCode(0);
    });
}
