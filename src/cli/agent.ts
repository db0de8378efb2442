// `erdma-smcr devices` (discovery, like a short ibv_devinfo) and `erdma-smcr agent` (the node agent).
import type { Command } from 'commander';
import { discover, formatDevices } from '../agent/discovery.js';
import type { AgentConfig, Config } from '../config/schema.js';
import type { CliIO } from './io.js';

type ConfigFor = (flags: Record<string, unknown>) => Readonly<Config>;

/** Discovery options from the agent configuration. */
export function discoveryOptions(a: AgentConfig): Parameters<typeof discover>[0] {
  return { hostRoot: a.hostRoot, driverMode: a.driverMode, extraDrivers: a.extraDrivers };
}

export function devicesCommand(program: Command, io: CliIO, configFor: ConfigFor, setCode: (c: number) => void): void {
  program
    .command('devices')
    .description('list the eRDMA devices of this node (from sysfs)')
    .option('--host-root <dir>', 'root of the host filesystem', undefined)
    .option('--json', 'print JSON')
    .action((opts: { hostRoot?: string; json?: boolean }) => {
      const config = configFor({ 'agent.hostRoot': opts.hostRoot });
      const devices = discover(discoveryOptions(config.agent));
      io.out(opts.json ? `${JSON.stringify(devices, null, 2)}\n` : formatDevices(devices));
      setCode(0);
    });
}

interface AgentOpts {
  hostRoot?: string;
  kubeletDir?: string;
  slots?: string;
  nodeName?: string;
  kubeconfig?: string;
  uninstall?: boolean;
}

export function agentCommand(program: Command, io: CliIO, configFor: ConfigFor, setCode: (c: number) => void): void {
  program
    .command('agent')
    .description('run the node agent: aliyun/erdma device plugin, node labels, host pnet, CNI chaining, pod outcome events')
    .option('--host-root <dir>', 'root of the host filesystem')
    .option('--kubelet-dir <dir>', 'kubelet directory (device-plugins/ below it)')
    .option('--slots <n>', 'pods that may share one device')
    .option('--node-name <name>', 'this node (default: $ERDMA_SMCR_NODE_NAME)')
    .option('--kubeconfig <file>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)')
    .option('--uninstall', 'remove our CNI plugin entry and binary from the host, then exit')
    .action(async (opts: AgentOpts) => {
      const config = configFor({
        'agent.hostRoot': opts.hostRoot,
        'agent.kubeletDir': opts.kubeletDir,
        'agent.slotsPerDevice': opts.slots === undefined ? undefined : Number.parseInt(opts.slots, 10),
        'agent.nodeName': opts.nodeName,
        'cluster.kubeconfig': opts.kubeconfig,
      });
      const { runAgent } = await import('./agent-run.js');
      await runAgent(config, io, opts.uninstall === true);
      setCode(0);
    });
}
