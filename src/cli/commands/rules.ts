// `erdma-smcr rules [ID]`: the admission rules, when each denies and how to fix it (docs/policy.md).
import { Option } from 'commander';
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { AppError } from '../../errors.js';
import { packagePath } from '../../util/package.js';
import type { CommandContext } from '../config.js';

/**
 * An example manifest where this install has it: the repository's path in a checkout, or where the
 * package holds it; the image ships no examples, so there the path is the source repository's.
 */
function exampleAt(example: string): string {
  const at = packagePath(example);
  if (!existsSync(at)) return `${example} (in the erdma-smcr source repository)`;
  const here = relative(process.cwd(), at);
  return here.startsWith('..') ? at : here;
}

/** What the text output says after a rule's id of the pods it judges (nothing for SMC-R pods). */
const SCOPE_NOTE = {
  smcr: '',
  rdma: '  (pods that get an RDMA device without SMC-R)',
  review: '  (the AdmissionReview itself, in the webhook)',
} as const;

/**
 * What `check` itself notes of an input (src/check/check.ts CHECK_NOTE): not an admission rule, but
 * an id `--skip-warning` takes and warnings carry, so `explain` answers for it too (#102).
 */
export const CHECK_NOTE_ENTRY = {
  id: 'check-note',
  scope: 'check',
  when: 'an AdmissionReview was read for the object it reviews; a namespace the webhook never sees; an annotation where no pod template can be told; an object of a kind check does not judge',
  fix: '`--skip-warning check-note` drops these notes from every output and from the count, so `--fail-on-warn` no longer fails on them',
} as const;

export function rulesCommand({ program, io, setCode }: CommandContext): void {
  program
    .command('rules')
    .alias('explain')
    .description('list the admission rules, or explain one: when it denies, the fix, an example')
    .argument('[id]', 'a rule id, as a denial prints it ([host-network])')
    .addOption(
      new Option('-o, --output <format>', 'output format')
        .choices(['text', 'json'])
        .default('text'),
    )
    .action(async (id: string | undefined, opts: { output: 'text' | 'json' }) => {
      const { RULE_CATALOGUE, plain } = await import('../../policy/catalogue.js');
      const wanted = id?.replace(/^\[|\]$/g, '');
      const rules =
        wanted === undefined ? RULE_CATALOGUE : RULE_CATALOGUE.filter((r) => r.id === wanted);
      if (wanted === CHECK_NOTE_ENTRY.id) {
        io.out(
          opts.output === 'json'
            ? `${JSON.stringify(CHECK_NOTE_ENTRY, null, 2)}\n`
            : `${CHECK_NOTE_ENTRY.id}  (what erdma-smcr check notes of an input; never a denial)\n  notes when:  ${CHECK_NOTE_ENTRY.when}\n  to hide it:  ${CHECK_NOTE_ENTRY.fix}\n`,
        );
        return setCode(0);
      }
      if (rules.length === 0) {
        const meant = await nearestRule(
          wanted ?? '',
          RULE_CATALOGUE.map((r) => r.id),
        );
        throw new AppError(
          'USAGE',
          `no rule "${wanted}"${meant ? `; did you mean ${meant}?` : '.'} The rules are ${RULE_CATALOGUE.map((r) => r.id).join(', ')}, and check's own ${CHECK_NOTE_ENTRY.id}.`,
        );
      }
      if (opts.output === 'json') {
        io.out(`${JSON.stringify(wanted === undefined ? rules : rules[0], null, 2)}\n`);
        return setCode(0);
      }
      const blocks = rules.map((r) =>
        [
          `${r.id}${SCOPE_NOTE[r.scope]}`,
          `  denies when: ${plain(r.when)}`,
          `  fix:         ${plain(r.fix)}`,
          ...(r.example ? [`  example:     ${exampleAt(r.example)}`] : []),
        ].join('\n'),
      );
      io.out(`${blocks.join('\n\n')}\n`);
      if (wanted === undefined)
        io.out('\nEvery denial names its rule ([host-network]); docs/policy.md has them all.\n');
      setCode(0);
    });
}

/** The rule id a mistyped one means: the same letters without dashes or case, or one near it. */
async function nearestRule(wanted: string, ids: readonly string[]): Promise<string | undefined> {
  const fold = (x: string): string => x.toLowerCase().replace(/[^a-z0-9]/g, '');
  const same = ids.find((id) => fold(id) === fold(wanted));
  if (same) return same;
  const { distance } = await import('../../config/load.js');
  const near = ids
    .map((id) => ({ id, d: distance(fold(wanted), fold(id)) }))
    .sort((a, b) => a.d - b.d)[0];
  return near && near.d <= 2 ? near.id : undefined;
}
