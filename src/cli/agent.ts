// `erdma-smcr devices` (discovery, like a short ibv_devinfo) and `erdma-smcr agent` (the node agent).
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Command } from 'commander';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AgentMetrics, NodeAgent } from '../agent/node-agent.js';
import { loadKubeConfig } from '../cluster/kube.js';
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

interface AgentOpts {
  hostRoot?: string;
  kubeletDir?: string;
  slots?: string;
  nodeName?: string;
  kubeconfig?: string;
  uninstall?: boolean;
}

async function agentHttp(config: AgentConfig, metrics: AgentMetrics, ready: () => string): Promise<FastifyInstance | undefined> {
  if (!config.metricsEnabled) return undefined;
  const app = Fastify({ logger: false });
  app.get('/metrics', async (_r, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_r, reply) => {
    const reason = ready();
    return reason ? reply.code(503).send({ status: 'not ready', reason }) : { status: 'ready' };
  });
  await app.listen({ host: config.metricsHost, port: config.metricsPort });
  return app;
}

function kubeFor(a: AgentConfig, file: string | undefined, logger: Logger): KubeConfig | undefined {
  if (!a.nodeLabels && !a.podEvents) return undefined;
  try {
    return loadKubeConfig(file);
  } catch (err) {
    logger.warn({ reason: (err as Error).message }, 'no Kubernetes API: node labels and pod events are off');
    return undefined;
  }
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
      const logger = createLogger(config.logLevel);
      const a = config.agent;
      const metrics = new AgentMetrics();
      const discoverNow = (): ReturnType<typeof discover> => discover(discoveryOptions(a));
      if (opts.uninstall) {
        new NodeAgent({ config: a, logger, metrics, discover: discoverNow }).uninstallCni();
        io.out(`removed erdma-smcr from the CNI configuration in ${join(a.hostRoot, a.cniConfDir)} and its binary\n`);
        return setCode(0);
      }
      logger.info({ config: a }, 'effective agent configuration');
      const kubeConfig = kubeFor(a, config.cluster.kubeconfig, logger);
      const agent = new NodeAgent({ config: a, logger, metrics, discover: discoverNow, ...(kubeConfig ? { kubeConfig } : {}) });
      const plugin = a.devicePlugin
        ? new ErdmaDevicePlugin({
            kubeletDir: a.kubeletDir,
            resourceName: a.resourceName,
            socketName: a.socketName,
            slotsPerDevice: a.slotsPerDevice,
            allocation: a.allocation,
            pollMs: a.pollMs,
            discover: discoverNow,
            logger,
            deviceRoot: a.deviceRoot,
          })
        : undefined;
      await plugin?.start();
      await agent.start();
      const http = await agentHttp(a, metrics, () => agent.readiness());
      if (http) io.out(`erdma-smcr agent: metrics and probes on http://${a.metricsHost}:${(http.server.address() as AddressInfo).port}\n`);
      await runUntilSignal(logger, 'stopping the agent', async () => {
        await agent.close();
        await plugin?.stop();
        await http?.close();
      });
      setCode(0);
    });
}
