// `erdma-smcr devices` (discovery, like a short ibv_devinfo) and `erdma-smcr agent` (the node agent).
import type { Command } from 'commander';
import { discover, formatDevices } from '../agent/discovery.js';
import { ErdmaDevicePlugin } from '../agent/plugin.js';
import type { AgentConfig, Config } from '../config/schema.js';
import { createLogger } from '../log.js';
import type { CliIO } from './io.js';
import { runUntilSignal } from './signals.js';

type ConfigFor = (flags: Record<string, unknown>) => Readonly<Config>;

function discoveryOptions(a: AgentConfig): Parameters<typeof discover>[0] {
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

export function agentCommand(program: Command, _io: CliIO, configFor: ConfigFor, setCode: (c: number) => void): void {
  program
    .command('agent')
    .description('run the node agent: the aliyun/erdma device plugin')
    .option('--host-root <dir>', 'root of the host filesystem')
    .option('--kubelet-dir <dir>', 'kubelet directory (device-plugins/ below it)')
    .option('--slots <n>', 'pods that may share one device')
    .action(async (opts: { hostRoot?: string; kubeletDir?: string; slots?: string }) => {
      const config = configFor({
        'agent.hostRoot': opts.hostRoot,
        'agent.kubeletDir': opts.kubeletDir,
        'agent.slotsPerDevice': opts.slots === undefined ? undefined : Number.parseInt(opts.slots, 10),
      });
      const logger = createLogger(config.logLevel);
      logger.info({ config: config.agent }, 'effective agent configuration');
      const a = config.agent;
      const plugin = new ErdmaDevicePlugin({
        kubeletDir: a.kubeletDir,
        resourceName: a.resourceName,
        socketName: a.socketName,
        slotsPerDevice: a.slotsPerDevice,
        allocation: a.allocation,
        pollMs: a.pollMs,
        discover: () => discover(discoveryOptions(a)),
        logger,
      });
      await plugin.start();
      await runUntilSignal(logger, 'stopping: removing the device plugin socket', () => plugin.stop());
      setCode(0);
    });
}
