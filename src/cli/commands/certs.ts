// `erdma-smcr certs generate`: a CA and serving certificate for people who manage them
// themselves (node-forge loads when it runs).
import { AppError } from '../../errors.js';
import type { CommandContext } from '../config.js';

interface GenerateOpts {
  service?: string;
  namespace?: string;
  out?: string;
  name?: string[];
  days?: string;
}

export function certsCommand({ program, io, setCode }: CommandContext): void {
  const certs = program
    .command('certs')
    .description('certificates for people who manage them themselves');
  certs
    .command('generate')
    .description(
      'write ca.crt, ca.key, tls.crt, tls.key for the webhook Service into a directory (keys 0600)',
    )
    .option('--service <name>', 'webhook Service name (required)')
    .option('--namespace <ns>', 'namespace of the Service (required)')
    .option(
      '--out <dir>',
      'output directory (required): a complete set there is kept, a CA pair is used, anything partial is refused (never overwritten)',
    )
    .option('--name <dns...>', 'extra DNS names or IPs')
    .option('--days <n>', 'serving certificate validity in days (CA: three times that)', '365')
    .addHelpText(
      'after',
      '\nExample:\n  erdma-smcr certs generate --service erdma-smcr-webhook --namespace erdma-smcr --out ./certs\n',
    )
    .action(async (given: GenerateOpts) => {
      // Every missing option at once, not one per run.
      const missing = (['service', 'namespace', 'out'] as const).filter((k) => !given[k]);
      if (missing.length > 0)
        throw new AppError(
          'USAGE',
          `certs generate needs ${missing.map((k) => `--${k}`).join(', ')} (see --help)`,
        );
      const opts = given as Required<Pick<GenerateOpts, 'service' | 'namespace' | 'out'>> &
        GenerateOpts;
      const [{ ensureLocalCerts }, { serviceNames }] = await Promise.all([
        import('../../certs/local.js'),
        import('../../certs/x509.js'),
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
