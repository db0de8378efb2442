// The device plugin process behind `erdma-smcr device-plugin`, loaded only when it runs. It
// imports what serving the kubelet needs (discovery, gRPC, the device plugin's metrics and probes)
// and none of the agent's duties (CNI chaining, pnet, observation, pod events, the API client):
// those stay in ../process.ts, which the agent runs (#43: a device plugin holds only its code).
import type { Logger } from 'pino';
import type { CliIO } from '../util/io.js';
import { runUntilSignal } from '../util/signals.js';
import type { AgentConfig, Config } from '../config/schema.js';
import { createLogger } from '../util/log.js';
import type { ProbeServer } from '../util/probes.js';
import { servedResources } from '../devices/resources.js';
import type { ErdmaDevicePlugin } from '../deviceplugin/plugin.js';
import { DevicePluginMetrics } from '../deviceplugin/metrics.js';
import { startDaemonProbes } from './probes.js';
import { discover, DiscoveryCache, discoveryOptions } from '../devices/discovery.js';
import { startFailure } from './startup.js';
import { writeHeldBack } from '../kubelet/held-back.js';
import { inHost } from '../agent/host.js';

/**
 * One kubelet registration per resource; a configuration the node's devices contradict stops here.
 * gRPC and the API definition are loaded only by a process that serves one (#43: the agent as
 * shipped does not).
 */
export async function devicePlugins(
  a: AgentConfig,
  discoverNow: () => ReturnType<typeof discover>,
  logger: Logger,
): Promise<ErdmaDevicePlugin[]> {
  const [{ ErdmaDevicePlugin }, { grpcLogsTo }] = await Promise.all([
    import('../deviceplugin/plugin.js'),
    import('../kubelet/serve.js'),
  ]);
  grpcLogsTo(logger);
  const stateFile = inHost(a.hostRoot, a.devicePluginStateFile);
  return servedResources(a, discoverNow).map((r) => {
    const log = logger.child({ resource: r.name });
    // What an earlier process held back is decided again by this one.
    try {
      writeHeldBack(stateFile, r.name, undefined);
    } catch {
      // No host dir for it (a test without one): the agent then sees nothing held back.
    }
    if (r.discover().length === 0)
      log.info(
        'no device on this node is selected for this resource: serving it with none until one appears',
      );
    return new ErdmaDevicePlugin({
      kubeletDir: a.kubeletDir,
      resourceName: r.name,
      socketName: r.socketName,
      slotsPerDevice: r.slots,
      allocation: r.allocation,
      mode: r.mode,
      pollMs: a.pollMs,
      discover: r.discover,
      logger: log,
      deviceRoot: a.deviceRoot,
      takeOver: a.takeOverResources,
      onHeldBack: (resource, others) => {
        try {
          writeHeldBack(stateFile, resource, others);
        } catch (err) {
          log.warn(
            { err: (err as Error).message },
            'cannot record the held-back resource for the agent',
          );
        }
      },
    });
  });
}

/**
 * `erdma-smcr device-plugin`: the kubelet's device plugins and nothing else, so that they can have
 * a lifecycle of their own (manifests/base/device-plugin.yaml, updated OnDelete): the agent's
 * routine updates, restarts and crashes then never leave the kubelet without an endpoint, which
 * fails every pod it admits meanwhile (docs/agent.md "Upgrading without failed pods").
 */
export async function runDevicePlugin(config: Readonly<Config>, io: CliIO): Promise<void> {
  const logger = createLogger(config.logLevel);
  const a = config.agent;
  const cache = new DiscoveryCache();
  const plugins = await devicePlugins(a, () => discover(discoveryOptions(a), cache), logger);
  const metrics = new DevicePluginMetrics(() => plugins);
  let probes: ProbeServer | undefined;
  try {
    for (const p of plugins) await p.start();
    probes = await startDaemonProbes(a, {
      ready: () => {
        const held = plugins.filter((p) => p.heldBackFor).map((p) => p.resourceName);
        if (held.length > 0)
          return `not taking over ${held.join(', ')}: another device plugin registered it with the kubelet (agent.takeOverResources)`;
        const waiting = plugins.filter((p) => !p.isRegistered).map((p) => p.resourceName);
        return waiting.length > 0
          ? `not registered with the kubelet yet: ${waiting.join(', ')}`
          : undefined;
      },
      metrics: metrics.registry,
    });
  } catch (err) {
    // A process that cannot serve its sockets or its probes exits, its sockets removed: the
    // DaemonSet restarts it.
    for (const p of plugins) await p.stop();
    throw startFailure('device plugin', err);
  }
  if (probes)
    io.out(`erdma-smcr device-plugin: probes on http://${a.metricsHost}:${probes.port}\n`);
  await runUntilSignal(logger, 'stopping the device plugins', async () => {
    for (const p of plugins) await p.stop();
    await probes?.close();
  });
}
