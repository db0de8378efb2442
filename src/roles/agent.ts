// The node agent process behind `erdma-smcr agent`, loaded only when it runs: it brings
// prom-client (and @grpc/grpc-js when it serves the device plugins too), which `devices` and the
// other subcommands never need. It owns the process: the duties (./agent.ts), the device plugins
// if configured, the probe port, the signals. `device-plugin` runs ./device-plugin.ts.
import type { Logger } from 'pino';
import type { CliIO } from '../util/io.js';
import { runUntilSignal } from '../util/signals.js';
import { loadKubeClient, type Env, type KubeClient } from '../cluster/kubeconfig.js';
import type { AgentConfig, Config } from '../config/schema.js';
import { createLogger } from '../util/log.js';
import type { ProbeServer } from '../util/probes.js';
import { NodeAgent } from '../agent/agent.js';
import { devicePlugins } from './device-plugin.js';
import { AgentMetrics } from '../agent/metrics.js';
import { startDaemonProbes } from './probes.js';
import { discover, DiscoveryCache, discoveryOptions } from '../devices/discovery.js';
import { startFailure } from './startup.js';
import { inHost } from '../agent/host.js';

async function kubeFor(
  a: AgentConfig,
  file: string | undefined,
  env: Env,
  logger: Logger,
): Promise<KubeClient | undefined> {
  if (!a.nodeLabels && !a.podEvents) return undefined;
  try {
    return await loadKubeClient(file, env);
  } catch (err) {
    logger.warn(
      { reason: (err as Error).message },
      'no Kubernetes API: node labels and pod events are off',
    );
    return undefined;
  }
}

/** Runs the agent until SIGTERM/SIGINT; with `uninstall`, removes our CNI entry and binary and returns. */
export async function runAgent(
  config: Readonly<Config>,
  io: CliIO,
  uninstall: boolean,
): Promise<void> {
  const logger = createLogger(config.logLevel);
  const a = config.agent;
  const metrics = new AgentMetrics();
  const cache = new DiscoveryCache();
  const discoverNow = (): ReturnType<typeof discover> => discover(discoveryOptions(a), cache);
  if (uninstall) {
    await new NodeAgent({ config: a, logger, metrics, discover: discoverNow }).uninstallCni();
    io.out(
      `removed erdma-smcr from the CNI configuration in ${inHost(a.hostRoot, a.cniConfDir)}, its binary, ` +
        `the preload library in ${inHost(a.hostRoot, a.preloadDir)} and the IPPROTO_SMC program's pins\n`,
    );
    return;
  }
  logger.info({ config: a }, 'effective agent configuration');
  const client = await kubeFor(a, config.cluster.kubeconfig, io.env, logger);
  const agent = new NodeAgent({
    config: a,
    logger,
    metrics,
    discover: discoverNow,
    ...(client ? { client } : {}),
  });
  const plugins = a.devicePlugin ? await devicePlugins(a, discoverNow, logger) : [];
  let probes: ProbeServer | undefined;
  try {
    for (const p of plugins) await p.start();
    await agent.start();
    probes = await startDaemonProbes(a, {
      ready: () => agent.readiness(),
      metrics: metrics.registry,
    });
  } catch (err) {
    // Nothing left running or behind: no duty, no device plugin socket.
    await agent.close();
    for (const p of plugins) await p.stop();
    throw startFailure('agent', err);
  }
  if (probes)
    io.out(`erdma-smcr agent: metrics and probes on http://${a.metricsHost}:${probes.port}\n`);
  await runUntilSignal(logger, 'stopping the agent', async () => {
    await agent.close();
    for (const p of plugins) await p.stop();
    await probes?.close();
  });
}
