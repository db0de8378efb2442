// `erdma-smcr agent`, `erdma-smcr device-plugin` and `erdma-smcr dra-plugin`: the node daemons.
// The commands read their flags; each process loads when it runs (src/roles/agent.ts,
// src/roles/device-plugin.ts, src/roles/dra.ts).
import type { Command } from 'commander';
import type { CommandContext } from '../config.js';

interface AgentOpts {
  hostRoot?: string;
  kubeletDir?: string;
  slots?: string;
  nodeName?: string;
  kubeconfig?: string;
  uninstall?: boolean;
}

/** The flags both daemons take: where the host's tree and the kubelet are, and the slots. */
function hostOptions(command: Command): Command {
  return command
    .option('--host-root <dir>', 'root of the host filesystem (default: /)')
    .option(
      '--kubelet-dir <dir>',
      'kubelet directory, device-plugins/ below it (default: /var/lib/kubelet)',
    )
    .option('--slots <n>', 'pods that may share one device (default: 64)');
}

/** Those flags as configuration keys (unset where not given). */
function hostFlags(opts: AgentOpts): Record<string, string | number | undefined> {
  return {
    'agent.hostRoot': opts.hostRoot,
    'agent.kubeletDir': opts.kubeletDir,
    'agent.slotsPerDevice': opts.slots === undefined ? undefined : Number.parseInt(opts.slots, 10),
  };
}

export function agentCommand({ program, io, configFor, setCode }: CommandContext): void {
  hostOptions(
    program
      .command('agent')
      .description(
        'run the node agent: node labels, host pnet, CNI chaining, pod outcome events (the aliyun/erdma device plugin too with ERDMA_SMCR_AGENT_DEVICE_PLUGIN=true; off by default, as the manifests ship it: they run `device-plugin` in a DaemonSet of its own)',
      ),
  )
    .option('--node-name <name>', 'this node (default: $ERDMA_SMCR_NODE_NAME)')
    .option('--kubeconfig <file>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)')
    .option(
      '--uninstall',
      'remove our CNI entry, the plugin binary, the preload library and the IPPROTO_SMC pins from the host (leaving a marker so a running agent does not put them back), then exit',
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  erdma-smcr agent                                  as the DaemonSet runs it (ERDMA_SMCR_HOST_ROOT=/host)',
        '  erdma-smcr agent --host-root /host --node-name n1 --kubeconfig ~/.kube/config',
        '  erdma-smcr agent --uninstall --host-root /host    what the uninstall runbook runs (docs/install.md)',
        '',
      ].join('\n'),
    )
    .action(async (opts: AgentOpts) => {
      const config = await configFor({
        ...hostFlags(opts),
        'agent.nodeName': opts.nodeName,
        'cluster.kubeconfig': opts.kubeconfig,
      });
      const { runAgent } = await import('../../roles/agent.js');
      await runAgent(config, io, opts.uninstall === true);
      setCode(0);
    });
  hostOptions(
    program
      .command('device-plugin')
      .description(
        'serve only the kubelet device plugins (aliyun/erdma and any configured), with a lifecycle apart from the agent',
      ),
  ).action(async (opts: AgentOpts) => {
    const config = await configFor(hostFlags(opts));
    const { runDevicePlugin } = await import('../../roles/device-plugin.js');
    await runDevicePlugin(config, io);
    setCode(0);
  });
  hostOptions(
    program
      .command('dra-plugin')
      .description(
        "serve the node's eRDMA devices through Dynamic Resource Allocation: the kubelet's DRA plugin (driver erdma.smcr.erdma.io, CDI) and the node's ResourceSlice (docs/agent.md)",
      ),
  )
    .option('--node-name <name>', 'this node (default: $ERDMA_SMCR_NODE_NAME)')
    .option('--kubeconfig <file>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)')
    .option('--cdi-dir <dir>', 'where the runtime reads CDI specs (default: /var/run/cdi)')
    .action(async (opts: AgentOpts & { cdiDir?: string }) => {
      const config = await configFor({
        ...hostFlags(opts),
        'agent.nodeName': opts.nodeName,
        'agent.cdiDir': opts.cdiDir,
        'cluster.kubeconfig': opts.kubeconfig,
      });
      const { runDraPlugin } = await import('../../roles/dra.js');
      await runDraPlugin(config, io);
      setCode(0);
    });
}
