// `erdma-smcr review`: one AdmissionReview (JSON) through the webhook's own code, offline; the
// response printed as the webhook would send it.
import { Option } from 'commander';
import type { Endpoint } from '../../admission/decision.js';
import { AppError } from '../../errors.js';
import type { CommandContext } from '../config.js';
import { errnoReason } from '../../util/errno.js';

interface ReviewOpts {
  profile?: string;
  nodes?: string;
  endpoint?: Endpoint;
  showPatch?: boolean;
}

/** The kind of a Kubernetes object given where a review was expected (a manifest), if it is one. */
function manifestKind(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const o = body as Record<string, unknown>;
  return typeof o.kind === 'string' &&
    o.kind !== 'AdmissionReview' &&
    typeof o.metadata === 'object' &&
    o.metadata !== null
    ? o.kind
    : undefined;
}

export function reviewCommand({ program, io, configFor, setCode }: CommandContext): void {
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
      const [config, { admit }, { decodeReview, encodeReview }, { offlineView }] =
        await Promise.all([
          configFor({ 'cluster.profile': opts.profile, 'cluster.nodes': opts.nodes }),
          import('../../admission/decision.js'),
          import('../../admission/review.js'),
          import('../../cluster/offline.js'),
        ]);
      const text =
        file === '-'
          ? io.stdin()
          : await import('node:fs').then((fs) => {
              try {
                return fs.readFileSync(file, 'utf8');
              } catch (err) {
                throw new AppError('INPUT_UNREADABLE', `cannot read ${file}: ${errnoReason(err)}`);
              }
            });
      const where = file === '-' ? '<stdin>' : file;
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw new AppError(
          'REVIEW_NOT_JSON',
          `${where}: not JSON: ${(err as Error).message} (review takes one AdmissionReview in JSON; for manifests, use \`erdma-smcr check\`)`,
        );
      }
      const manifest = manifestKind(body);
      if (manifest)
        throw new AppError(
          'REVIEW_INVALID',
          `${where}: a ${manifest}, not an AdmissionReview: \`erdma-smcr check ${file}\` checks manifests (review takes one AdmissionReview, as the API server sends it)`,
        );
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
