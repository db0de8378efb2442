// `erdma-smcr status`: what this node's SMC-R pods' connections run on, read from the kernel
// through the native binary, from the same records and with the same reading as the agent.
import { Option } from 'commander';
import { requireHostRoot } from './devices.js';
import { AppError } from '../../errors.js';
import type { CommandContext } from '../config.js';
import { inHost } from '../../agent/host.js';

interface StatusOpts {
  hostRoot?: string;
  pod?: string;
  output: string;
}

export function statusCommand({ program, io, configFor, setCode }: CommandContext): void {
  program
    .command('status')
    .description(
      "what this node's SMC-R pods' connections run on (SMC-R or TCP, why they fell back, which device), read from the kernel",
    )
    .option('--host-root <dir>', 'root of the host filesystem (default: /)')
    .option('--pod <namespace/name>', 'one pod, with its connections listed (like smcss)')
    .addOption(
      new Option('-o, --output <format>', 'output format')
        .choices(['text', 'json'])
        .default('text'),
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples (in the agent pod: kubectl -n erdma-smcr exec <agent pod> -- node /app/bin/erdma-smcr.js ...):',
        '  erdma-smcr status                       every SMC-R pod of this node',
        '  erdma-smcr status --pod default/my-pod  its connections, like smcss',
        '  erdma-smcr status -o json',
        '',
      ].join('\n'),
    )
    .action(async (opts: StatusOpts) => {
      if (opts.output !== 'text' && opts.output !== 'json')
        throw new AppError('USAGE', `--output must be text or json, got "${opts.output}"`);
      if (opts.pod !== undefined && !/^[^/]+\/[^/]+$/.test(opts.pod))
        throw new AppError('USAGE', `--pod must be namespace/name, got "${opts.pod}"`);
      const { agent: a } = await configFor({ 'agent.hostRoot': opts.hostRoot });
      requireHostRoot(a.hostRoot);
      const { findPodNetns } = await import('../../agent/host.js');
      const [{ collectPodSmc }, { formatStatus }] = await Promise.all([
        import('../../agent/observe/smc.js'),
        import('../output/smc-status.js'),
      ]);
      const { NativeBinary } = await import('../../native/binary.js');
      const { recordedPods } = await import('../../native/contract.js');
      const records = recordedPods(inHost(a.hostRoot, a.cniStateDir))
        .filter((r) => opts.pod === undefined || `${r.namespace}/${r.name}` === opts.pod)
        .sort((x, y) => byCodeUnit(x.namespace, y.namespace) || byCodeUnit(x.name, y.name));
      if (opts.pod !== undefined && records.length === 0)
        throw new AppError(
          'USAGE',
          `no SMC-R pod ${opts.pod} on this node (our CNI plugin has no record of it)`,
        );
      const pods = await collectPodSmc(records, {
        binary: new NativeBinary(a.nativeBinary),
        hostRoot: a.hostRoot,
        byPod: (uid) => findPodNetns(a.procRoot, uid),
        procRoot: a.procRoot,
        ...(opts.pod ? { socketsOf: new Set([opts.pod]) } : {}),
      });
      io.out(
        opts.output === 'json' ? `${JSON.stringify({ pods }, null, 2)}\n` : formatStatus(pods),
      );
      setCode(pods.some((p) => p.error) ? 1 : 0);
    });
}

/** As kubectl lists: namespace, then name, in byte order (the same on every host's locale). */
const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
