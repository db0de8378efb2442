// The node binary's tools, from the one CLI: `erdma-smcr mechanisms`, `pnet`, `ueid`, `net`, `smc`,
// `bpf` and `sysctls` are commands of native/build/erdma-smcr (the CNI plugin, which needs no
// Node.js on the host), and the docs name them as `erdma-smcr ...`. Here each is handed to that
// binary with its arguments, and its output and exit code are the command's: one name for an admin
// on a node, in the agent pod or in a checkout (#80).
import { AppError } from '../../errors.js';
import type { CommandContext } from '../config.js';

/** Each tool of the node binary, with what it does (native/src/node_tools.c, mechanisms.c). */
export const NODE_TOOLS: Readonly<Record<string, string>> = {
  mechanisms: 'which ways of making a TCP socket SMC work on this node, and loopback-ism (JSON)',
  pnet: "the SMC pnet table (list, add, del, flush), of this or a pod's network namespace",
  ueid: 'the SMC user EIDs (list, add, del, flush)',
  net: "a network namespace's links, addresses and routes (show), or configure an ENI",
  smc: "a network namespace's SMC sockets, their summary and SMC's statistics (JSON)",
  bpf: "the IPPROTO_SMC program's pins: load, status, enable or disable a netns, unload",
  sysctls: 'the sysctls the CNI plugin may set, with their ranges (JSON)',
};

/** Output kept from one call: `smc sockets` of a netns with 100,000 sockets is about 30 MB. */
const MAX_OUTPUT = 256 << 20;

const asksForHelp = (args: readonly string[]): boolean =>
  args[0] === 'help' || args.some((a) => a === '--help' || a === '-h');

/** The usage of a node tool, for a machine without the node binary. */
export function toolUsage(name: string, what: string, binary: string): string {
  return [
    `Usage: erdma-smcr ${name} [args...]`,
    '',
    `${what[0]!.toUpperCase()}${what.slice(1)}.`,
    '',
    `A command of the node binary (native/build/erdma-smcr, the CNI plugin's), which is not at`,
    `${binary} on this machine. It runs as root on an eRDMA node, and the agent's image has it:`,
    '',
    `  pod=$(kubectl -n erdma-smcr get pods -l app.kubernetes.io/component=agent \\`,
    `    --field-selector spec.nodeName=NODE -o name)`,
    `  kubectl -n erdma-smcr exec "$pod" -- node /app/bin/erdma-smcr.js ${name} --help`,
    '',
    'In a checkout: make -C native, then erdma-smcr ' + name + ' --help gives its own usage.',
    '',
  ].join('\n');
}

export function nodeToolsCommand({ program, io, configFor, setCode }: CommandContext): void {
  for (const [name, what] of Object.entries(NODE_TOOLS))
    program
      .command(name)
      .description(`${what}; the node binary's (native/build/erdma-smcr), run as root on a node`)
      .argument('[args...]', "the node binary's arguments (`erdma-smcr " + name + ' x --help`)')
      // Everything after the name is the binary's: its own usage answers --help and bad flags.
      .helpOption(false)
      .allowUnknownOption()
      .allowExcessArguments()
      .action(async (args: string[]) => {
        // Loaded here, not with the CLI: every other command's start-up does without them (#43).
        const [{ spawnSync }, { DEFAULT_NATIVE_BINARY }] = await Promise.all([
          import('node:child_process'),
          import('../../native/binary.js'),
        ]);
        const binary = (await configFor({})).agent.nativeBinary ?? DEFAULT_NATIVE_BINARY;
        const r = spawnSync(binary, [name, ...args], { maxBuffer: MAX_OUTPUT });
        if (r.error) {
          const missing = (r.error as NodeJS.ErrnoException).code === 'ENOENT';
          // Asked for help where the binary is not (a laptop, CI): what the command is and where
          // it runs, not the error meant for running it (#85 item 3).
          if (missing && asksForHelp(args)) {
            io.out(toolUsage(name, what, binary));
            return;
          }
          throw new AppError(
            'USAGE',
            missing
              ? `${name} is a command of the node binary, which is not at ${binary}: build it (make -C native) or set agent.nativeBinary; on a cluster, run it in the agent pod of the node (docs/troubleshooting.md)`
              : `cannot run ${binary}: ${r.error.message}`,
          );
        }
        io.out(r.stdout.toString('utf8'));
        io.err(r.stderr.toString('utf8'));
        setCode(r.status ?? 2);
      });
}
