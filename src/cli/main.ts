// The erdma-smcr command line: one binary, a subcommand per role (each in ./commands/).
import { Command, CommanderError, Option } from 'commander';
import { LOG_LEVELS } from '../constants.js';
import { AppError, exitFor, isAppError } from '../errors.js';
import { agentCommand } from './commands/agent.js';
import { certsCommand } from './commands/certs.js';
import { checkCommand } from './commands/check.js';
import { completionCommand } from './commands/completion.js';
import { devicesCommand } from './commands/devices.js';
import { nodeToolsCommand } from './commands/node-tools.js';
import { reviewCommand } from './commands/review.js';
import { rulesCommand } from './commands/rules.js';
import { serveCommand } from './commands/serve.js';
import { statusCommand } from './commands/status.js';
import {
  configFrom,
  packageVersion,
  type CommandContext,
  type ConfigFor,
  type GlobalOpts,
} from './config.js';
import { processIO, type CliIO } from '../util/io.js';

/** Builds the program; `setCode` receives each command's exit code. */
export function buildProgram(io: CliIO, setCode: (c: number) => void): Command {
  const program = new Command('erdma-smcr')
    .description('Transparent SMC-R for Kubernetes pods on Alibaba Cloud eRDMA nodes')
    .version(packageVersion(), '-v, --version', 'print the version')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS))
    .exitOverride()
    // Each command's --help shows -c and --log-level too (kubectl lists its global flags).
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });
  program
    .command('version')
    .description('print the version')
    .action(() => {
      io.out(`${packageVersion()}\n`);
      setCode(0);
    });
  const configFor: ConfigFor = (flags) => configFrom(program.opts<GlobalOpts>(), io, flags);
  const context: CommandContext = { program, io, configFor, setCode };
  for (const add of [
    checkCommand,
    rulesCommand,
    serveCommand,
    reviewCommand,
    certsCommand,
    devicesCommand,
    agentCommand,
    statusCommand,
    nodeToolsCommand,
    completionCommand,
  ])
    add(context);
  return program;
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: readonly string[], io: CliIO = processIO()): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  // An unknown command is an error, with --help too: commander would print the top-level help and
  // exit 0, which reads as success to a script (#80). argv is node's: the program, then its script.
  const named = firstOperand(argv.slice(2));
  if (
    named !== undefined &&
    named !== 'help' &&
    !program.commands.some((c) => c.name() === named || c.aliases().includes(named))
  ) {
    io.err(
      `erdma-smcr: unknown command '${named}'; the commands are ${program.commands.map((c) => c.name()).join(', ')}\n`,
    );
    return 2;
  }
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
      return exitFor(err.code, named);
    }
    const wrapped = new AppError('INTERNAL', String((err as Error)?.stack ?? err));
    io.err(`erdma-smcr: internal error: ${wrapped.message}\n`);
    return exitFor(wrapped.code, named);
  }
}

/** The global options that take a value (`-c FILE`), so that their value is not read as a command. */
const VALUED = new Set(['-c', '--config', '--log-level']);

/** The command a command line names: its first operand after the global options, if any. */
function firstOperand(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (VALUED.has(a)) i++;
    else if (a === '--') return argv[i + 1];
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}
