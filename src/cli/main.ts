// The erdma-smcr command line: one binary, a subcommand per role.
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { AppError, isAppError } from '../errors.js';
import { checkPaths } from '../check/check.js';
import { processIO, type CliIO } from './io.js';
import { OUTPUT_FORMATS, reportWriter, type OutputFormat } from './output/writer.js';
import { certsCommand, reviewCommand, serveCommand } from './commands/webhook.js';
import { agentCommand, devicesCommand, statusCommand } from './commands/agent.js';

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

interface GlobalOpts {
  config?: string;
  logLevel?: string;
}

export function configFrom(
  globals: GlobalOpts,
  io: CliIO,
  flags: Record<string, unknown> = {},
): Readonly<Config> {
  return loadConfig({
    ...(globals.config ? { file: globals.config } : {}),
    env: io.env,
    flags: { logLevel: globals.logLevel, ...flags },
  });
}

interface CheckOpts {
  profile?: string;
  nodes?: string;
  output: OutputFormat;
  showPatch?: boolean;
  color?: boolean;
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

function checkCommand(program: Command, io: CliIO, setCode: (c: number) => void): void {
  program
    .command('check')
    .description(
      'check manifests against the SMC-R admission policy, offline (exit 0 allowed, 1 denied, 2 input error)',
    )
    .argument('[paths...]', 'files, directories (recursive) or - for stdin', ['.'])
    .option('--profile <file>', 'cluster profile (YAML): driverMode, ipFamilies, nodes')
    .option('--nodes <file>', 'NodeList (kubectl get nodes -o yaml) for node checks')
    .addOption(
      new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('text'),
    )
    .option('--show-patch', 'print the JSON Patch the webhook would apply to each pod')
    .option('--no-color', 'never colour the text output')
    .action((paths: string[], opts: CheckOpts) => {
      const config = configFrom(program.opts<GlobalOpts>(), io, {
        'cluster.profile': opts.profile,
        'cluster.nodes': opts.nodes,
      });
      const choice = {
        ...(config.cluster.profile ? { profileFile: config.cluster.profile } : {}),
        ...(config.cluster.nodes ? { nodesFile: config.cluster.nodes } : {}),
      };
      // Patches are kept only where they are shown: memory stays flat in the size of the tree.
      const keepPatch = opts.output === 'json' || opts.showPatch === true;
      const text = {
        color: opts.color !== false && io.stdoutIsTTY && io.env.NO_COLOR === undefined,
        showPatch: opts.showPatch === true,
      };
      // Every format is written as results arrive; no result is kept.
      const out = coalesced(io.out);
      const writer = reportWriter(opts.output, out.write, {
        text,
        version: packageVersion(),
        now: new Date(),
      });
      let report;
      try {
        report = checkPaths(
          paths,
          () => io.stdin(),
          choice,
          config.policy,
          keepPatch,
          (r) => writer.result(r),
        );
        writer.end(report);
      } finally {
        out.flush();
        writer.close?.();
      }
      // Input errors also go to stderr, where a CI log shows them whatever the output format.
      for (const e of report.errors) io.err(`erdma-smcr: ${e.message}\n`);
      // 2 when an input could not be read (every other file was still checked and reported).
      setCode(report.summary.errors > 0 ? 2 : report.summary.denied > 0 ? 1 : 0);
    });
}

/** Builds the program; `setCode` receives each command's exit code. */
export function buildProgram(io: CliIO, setCode: (c: number) => void): Command {
  const program = new Command('erdma-smcr')
    .description('Transparent SMC-R for Kubernetes pods on Alibaba Cloud eRDMA nodes')
    .version(packageVersion())
    .option('-c, --config <file>', 'configuration file (YAML)')
    .option('--log-level <level>', 'trace|debug|info|warn|error|silent')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });
  checkCommand(program, io, setCode);
  const configFor = (flags: Record<string, unknown>): Readonly<Config> =>
    configFrom(program.opts<GlobalOpts>(), io, flags);
  serveCommand(program, io, configFor, setCode);
  reviewCommand(program, io, configFor, setCode);
  certsCommand(program, io, setCode);
  devicesCommand(program, io, configFor, setCode);
  agentCommand(program, io, configFor, setCode);
  statusCommand(program, io, configFor, setCode);
  return program;
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: readonly string[], io: CliIO = processIO()): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv]);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit 0; any usage error exits 2 (commander says 1).
      return err.exitCode === 0 ? 0 : 2;
    }
    if (isAppError(err)) {
      io.err(`erdma-smcr: ${err.message}\n`);
      return err.exitCode;
    }
    const wrapped = new AppError('INTERNAL', String((err as Error)?.stack ?? err));
    io.err(`erdma-smcr: internal error: ${wrapped.message}\n`);
    return wrapped.exitCode;
  }
}
