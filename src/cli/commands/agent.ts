// `erdma-smcr devices` (discovery, like a short ibv_devinfo) and `erdma-smcr agent` (the node agent).
import type { Command } from 'commander';
import { discover, formatDevices } from '../../agent/node/discovery.js';
import { join } from 'node:path';
import type { AgentConfig, Config } from '../../config/schema.js';
import { AppError } from '../../errors.js';
import type { CliIO } from '../io.js';

type ConfigFor = (flags: Record<string, unknown>) => Readonly<Config>;

/** Discovery options from the agent configuration. */
export function discoveryOptions(a: AgentConfig): Parameters<typeof discover>[0] {
  return { hostRoot: a.hostRoot, driverMode: a.driverMode, extraDrivers: a.extraDrivers };
}

export function devicesCommand(
  program: Command,
  io: CliIO,
  configFor: ConfigFor,
  setCode: (c: number) => void,
): void {
  program
    .command('devices')
    .description('list the eRDMA devices of this node (from sysfs)')
    .option('--host-root <dir>', 'root of the host filesystem', undefined)
    .option('--json', 'print JSON')
    .option(
      '--watch',
      'traffic per device and port like `eadm stat -l`: rates each interval, max/avg/min, totals (Ctrl-C ends)',
    )
    .option('--interval <ms>', 'with --watch: sampling interval', '1000')
    .option('--count <n>', 'with --watch: stop after this many samples')
    .action(
      async (opts: {
        hostRoot?: string;
        json?: boolean;
        watch?: boolean;
        interval: string;
        count?: string;
      }) => {
        const config = configFor({ 'agent.hostRoot': opts.hostRoot });
        const devices = discover(discoveryOptions(config.agent));
        if (!opts.watch) {
          io.out(opts.json ? `${JSON.stringify(devices, null, 2)}\n` : formatDevices(devices));
          return setCode(0);
        }
        const interval = Number(opts.interval);
        const count = opts.count === undefined ? Infinity : Number(opts.count);
        if (!Number.isInteger(interval) || interval < 100)
          throw new AppError(
            'USAGE',
            `--interval must be at least 100 (ms), got "${opts.interval}"`,
          );
        if (!(count >= 1))
          throw new AppError('USAGE', `--count must be a positive number, got "${opts.count}"`);
        if (devices.length === 0)
          throw new AppError('USAGE', 'no eRDMA devices to watch on this node');
        await watchDevices(
          io,
          devices.map((d) => d.name),
          config.agent.hostRoot,
          interval,
          count,
          opts.json === true,
        );
        setCode(0);
      },
    );
}

/**
 * Samples the devices' counters every interval: on a terminal the view is redrawn in place, on a
 * pipe each sample is appended (JSON lines with --json). Ends after `count` samples or on SIGINT.
 */
async function watchDevices(
  io: CliIO,
  names: readonly string[],
  hostRoot: string,
  interval: number,
  count: number,
  json: boolean,
): Promise<void> {
  const { RateWatch, formatRates, readDeviceCounters } =
    await import('../../agent/observe/counters.js');
  const watch = new RateWatch();
  let stop = false;
  const onInt = (): void => {
    stop = true;
  };
  process.once('SIGINT', onInt);
  try {
    for (let n = 0; n < count && !stop; n++) {
      if (n > 0) await new Promise((r) => setTimeout(r, interval));
      const rows = watch.sample(
        names.flatMap((d) => readDeviceCounters(hostRoot, d)),
        Date.now(),
      );
      if (json) io.out(`${JSON.stringify({ time: new Date().toISOString(), ports: rows })}\n`);
      else if (io.stdoutIsTTY)
        io.out(`\x1b[H\x1b[2J${new Date().toISOString()}\n${formatRates(rows)}`);
      else io.out(`${new Date().toISOString()}\n${formatRates(rows)}`);
    }
  } finally {
    process.removeListener('SIGINT', onInt);
  }
}

interface StatusOpts {
  hostRoot?: string;
  pod?: string;
  output: string;
}

export function statusCommand(
  program: Command,
  io: CliIO,
  configFor: ConfigFor,
  setCode: (c: number) => void,
): void {
  program
    .command('status')
    .description(
      "what this node's SMC-R pods' connections run on (SMC-R or TCP, why they fell back, which device), read from the kernel",
    )
    .option('--host-root <dir>', 'root of the host filesystem')
    .option('--pod <namespace/name>', 'one pod, with its connections listed (like smcss)')
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (opts: StatusOpts) => {
      if (opts.output !== 'text' && opts.output !== 'json')
        throw new AppError('USAGE', `--output must be text or json, got "${opts.output}"`);
      if (opts.pod !== undefined && !/^[^/]+\/[^/]+$/.test(opts.pod))
        throw new AppError('USAGE', `--pod must be namespace/name, got "${opts.pod}"`);
      const { agent: a } = configFor({ 'agent.hostRoot': opts.hostRoot });
      const { findPodNetns, readRecords } = await import('../../agent/observe/pods.js');
      const { collectPodSmc, formatStatus } = await import('../../agent/observe/smc.js');
      const { DEFAULT_NATIVE_BINARY } = await import('../../agent/agent.js');
      const records = [...readRecords(join(a.hostRoot, a.cniStateDir)).values()]
        .map((r) => ({ namespace: r.podNamespace, name: r.podName, uid: r.podUid, netns: r.netns }))
        .filter((r) => opts.pod === undefined || `${r.namespace}/${r.name}` === opts.pod)
        .sort((x, y) => `${x.namespace}/${x.name}`.localeCompare(`${y.namespace}/${y.name}`));
      if (opts.pod !== undefined && records.length === 0)
        throw new AppError(
          'USAGE',
          `no SMC-R pod ${opts.pod} on this node (our CNI plugin has no record of it)`,
        );
      const pods = await collectPodSmc(records, {
        binary: a.nativeBinary ?? DEFAULT_NATIVE_BINARY,
        hostRoot: a.hostRoot,
        byPod: (uid) => findPodNetns(a.procRoot, uid),
        ...(opts.pod ? { socketsOf: new Set([opts.pod]) } : {}),
      });
      io.out(
        opts.output === 'json' ? `${JSON.stringify({ pods }, null, 2)}\n` : formatStatus(pods),
      );
      setCode(pods.some((p) => p.error) ? 1 : 0);
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

export function agentCommand(
  program: Command,
  io: CliIO,
  configFor: ConfigFor,
  setCode: (c: number) => void,
): void {
  program
    .command('agent')
    .description(
      'run the node agent: aliyun/erdma device plugin, node labels, host pnet, CNI chaining, pod outcome events',
    )
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
        'agent.slotsPerDevice':
          opts.slots === undefined ? undefined : Number.parseInt(opts.slots, 10),
        'agent.nodeName': opts.nodeName,
        'cluster.kubeconfig': opts.kubeconfig,
      });
      const { runAgent } = await import('../../agent/process.js');
      await runAgent(config, io, opts.uninstall === true);
      setCode(0);
    });
}
