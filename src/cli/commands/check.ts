// `erdma-smcr check`: the admission policy over manifests, offline, for people and CI pipelines.
import { Option } from 'commander';
import { configFrom, packageVersion, type GlobalOpts, type CommandContext } from '../config.js';
import { AppError } from '../../errors.js';
import type { CliIO } from '../../util/io.js';
import { OUTPUT_FORMATS, type OutputFormat } from '../output/formats.js';
import type { TextOptions } from '../output/text.js';
import type { Keep } from '../../check/check.js';

interface CheckOpts {
  profile?: string;
  nodes?: string;
  output: OutputFormat;
  showPatch?: boolean;
  showMutated?: boolean;
  color?: boolean;
  failOnWarn?: boolean;
  skipWarning?: string[];
  filename?: string[];
  quiet?: boolean;
  exclude?: string[];
  notObjects: 'skip' | 'error';
}

/** Many small writes gathered into a few large ones (each `process.stdout.write` is a system call). */
function coalesced(
  write: (text: string) => void,
  limit = 64 << 10,
): { write: (text: string) => void; flush: () => void } {
  let parts: string[] = [];
  let size = 0;
  const flush = (): void => {
    if (parts.length > 0) write(parts.join(''));
    parts = [];
    size = 0;
  };
  return {
    write(text) {
      parts.push(text);
      size += text.length;
      if (size >= limit) flush();
    },
    flush,
  };
}

export function checkCommand({ program, io, setCode }: CommandContext): void {
  program
    .command('check')
    .description(
      'check manifests against the SMC-R admission policy, offline (exit 0 allowed, 1 denied, 2 input error, 3 warnings with --fail-on-warn)',
    )
    .argument(
      '[paths...]',
      'files, directories (recursive) or - for stdin (default: stdin when something is piped in, else .)',
    )
    .option(
      '-f, --filename <path...>',
      'files, directories or - (as kubectl: repeatable, same as the paths above)',
    )
    .option('--profile <file>', 'cluster profile (YAML): driverMode, ipFamilies, nodes')
    .option('--nodes <file>', 'NodeList (kubectl get nodes -o yaml) for node checks')
    .addOption(
      new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('text'),
    )
    .option(
      '--show-patch',
      "text output: the JSON Patch the webhook applies to each pod (a workload's: to each pod it creates)",
    )
    .option(
      '--show-mutated',
      'text output: each pod as the webhook admits it, as YAML (kyverno apply prints patched resources)',
    )
    .option('--no-color', 'never colour the text output')
    .option('-q, --quiet', 'text output: only denials and warnings, then the summary')
    .option('--fail-on-warn', 'exit 3 when objects are allowed but some have warnings (conftest)')
    .option(
      '--skip-warning <rule>',
      "drop that rule's warnings from the output and the count (repeatable), e.g. --skip-warning reserved-ports",
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .addOption(
      new Option(
        '--not-objects <action>',
        'documents that are not Kubernetes objects (dashboards, rule files, JSON patches): skip them with a note, or make each an input error (exit 2)',
      )
        .choices(['skip', 'error'])
        .default('skip'),
    )
    .option(
      '--exclude <regex>',
      "skip files whose path matches (repeatable, as conftest's --ignore), e.g. --exclude '/charts/'",
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  erdma-smcr check manifests/                      a tree, judged by the ClusterProfile found in it or above it',
        '  kubectl kustomize overlays/prod | erdma-smcr check -   what a kustomization renders',
        '  erdma-smcr check -o sarif --profile prod.yaml k8s/ > smcr.sarif',
        '  erdma-smcr check --show-mutated pod.yaml          each pod as the webhook admits it',
        '',
      ].join('\n'),
    )
    .action(async (positional: string[], opts: CheckOpts) => {
      const given = [...positional, ...(opts.filename ?? [])];
      const [{ checkPaths, CHECK_NOTE }, { visible }, { reportWriter }, { RULE_CATALOGUE }] =
        await Promise.all([
          import('../../check/check.js'),
          import('../output/common.js'),
          import('../output/writer.js'),
          import('../../policy/catalogue.js'),
        ]);
      const skipWarnings = skippedWarnings(opts.skipWarning, [
        ...RULE_CATALOGUE.map((r) => r.id),
        CHECK_NOTE,
      ]);
      // kubectl's `-f -` habit: piped input is read, never silently ignored for the directory.
      const paths = given.length > 0 ? given : io.stdinHasInput() ? ['-'] : ['.'];
      const config = await configFrom(program.opts<GlobalOpts>(), io, {
        'cluster.profile': opts.profile,
        'cluster.nodes': opts.nodes,
      });
      const choice = {
        ...(config.cluster.profile ? { profileFile: config.cluster.profile } : {}),
        ...(config.cluster.nodes ? { nodesFile: config.cluster.nodes } : {}),
      };
      const { text, keep } = shown(opts, io);
      // Every format is written as results arrive; no result is kept.
      const out = coalesced(io.out);
      const writer = reportWriter(opts.output, out.write, {
        text,
        version: packageVersion(),
        now: new Date(),
      });
      let report;
      try {
        report = checkPaths(paths, {
          stdin: () => io.stdin(),
          choice,
          config: config.policy,
          keep: { ...keep, skipWarnings },
          onResult: (r) => writer.result(r),
          exclude: excludes(opts.exclude),
          notObjects: opts.notObjects,
        });
        writer.end(report);
      } finally {
        out.flush();
        writer.close?.();
      }
      for (const n of report.notices ?? []) io.err(`erdma-smcr: ${visible(n)}\n`);
      // Input errors also go to stderr, where a CI log shows them whatever the output format; the
      // text output lists them itself, so there each is said once.
      if (opts.output !== 'text')
        for (const e of report.errors) io.err(`erdma-smcr: ${visible(e.message)}\n`);
      // Nothing checked is an input error of the report's own (NOTHING_TO_CHECK): exit 2.
      setCode(exitCode(report.summary, opts.failOnWarn === true));
    });
}

/**
 * Colour on a terminal that can show it (not TERM=dumb); never with --no-color or a non-empty
 * NO_COLOR (no-color.org: an empty value is as if unset); with FORCE_COLOR (not "0" or "false")
 * also when piped, as CI logs that render colour ask for it (the convention of chalk and Node).
 */
function colour(flag: boolean | undefined, io: CliIO): boolean {
  if (flag === false || (io.env.NO_COLOR ?? '') !== '') return false;
  const force = io.env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  return io.stdoutIsTTY && io.env.TERM !== 'dumb';
}

/** --exclude's patterns; one that is not a regular expression is a usage error naming it. */
function excludes(patterns: readonly string[] = []): RegExp[] {
  return patterns.map((p) => {
    try {
      return new RegExp(p);
    } catch (err) {
      throw new AppError(
        'USAGE',
        `--exclude ${p}: not a regular expression (${(err as Error).message})`,
      );
    }
  });
}

/** --skip-warning's rule ids; one that names no rule is a usage error listing those that do. */
function skippedWarnings(
  ids: readonly string[] = [],
  known: readonly string[],
): ReadonlySet<string> {
  for (const id of ids)
    if (!known.includes(id))
      throw new AppError(
        'USAGE',
        `--skip-warning ${id}: no such rule (${known.join(', ')}; \`erdma-smcr rules\` says what each is)`,
      );
  return new Set(ids);
}

/** The text output's options, and what each result keeps for the chosen output. */
function shown(opts: CheckOpts, io: CliIO): { text: TextOptions; keep: Keep } {
  const text = {
    color: colour(opts.color, io),
    showPatch: opts.showPatch === true,
    showMutated: opts.showMutated === true,
    quiet: opts.quiet === true,
  };
  if ((text.showPatch || text.showMutated) && opts.output !== 'text') {
    const why =
      opts.output === 'json' ? "carries each pod's patch itself" : 'has no place for them';
    throw new AppError(
      'USAGE',
      `--show-patch and --show-mutated are for the text output; -o ${opts.output} ${why}`,
    );
  }
  // Patches are kept only where they are shown: memory stays flat in the size of the tree.
  const keep = {
    patch: opts.output === 'json' || text.showPatch,
    preview: text.showPatch || text.showMutated,
    admitted: opts.output === 'yaml',
  };
  return { text, keep };
}

/**
 * 2 when an input could not be read (every other file was still checked and reported) or nothing
 * was checked; 1 when an object is denied; 3 for warnings with --fail-on-warn; else 0.
 */
function exitCode(
  s: { readonly errors: number; readonly denied: number; readonly warnings: number },
  failOnWarn: boolean,
): number {
  if (s.errors > 0) return 2;
  if (s.denied > 0) return 1;
  return failOnWarn && s.warnings > 0 ? 3 : 0;
}
