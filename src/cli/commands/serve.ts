// `erdma-smcr serve`: the admission webhook. The command only reads its flags: the process and
// its heavy modules (fastify, node-forge, prom-client) load when it runs (src/admission/process.ts).
import { Option, type Command } from 'commander';
import type { ConfigFor } from '../config.js';
import type { CliIO } from '../../util/io.js';

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
      const config = await configFor({
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
