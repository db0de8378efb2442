// The node agent process behind `erdma-smcr agent`, loaded only when it runs: it brings
// @grpc/grpc-js and prom-client, which `devices` and the other subcommands never need. It owns
// the process: the device plugins, the duties (./agent.ts), the probe port, the signals.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { CliIO } from '../util/io.js';
import { runUntilSignal } from '../util/signals.js';
import { loadKubeClient, type Env, type KubeClient } from '../cluster/kubeconfig.js';
import type { AgentConfig, Config } from '../config/schema.js';
import { createLogger } from '../util/log.js';
import { listenFailure, startProbeServer } from '../util/probes.js';
import { AppError, isAppError } from '../errors.js';
import { NodeAgent } from './agent.js';
import { servedResources } from './deviceplugin/resources.js';
import type { ErdmaDevicePlugin } from './deviceplugin/server.js';
import { AgentMetrics, DevicePluginMetrics } from './metrics.js';
import { discover, DiscoveryCache, discoveryOptions } from './node/discovery.js';

/**
 * A start-up failure as one line: a host path the agent needs and cannot find, with the setting
 * that names it; an AppError (a port) as it is.
 */
function startFailure(err: unknown): unknown {
  if (isAppError(err)) return err;
  const e = err as NodeJS.ErrnoException & { dest?: string };
  if (e?.code === 'ENOENT' && e.path) {
    // A copy names both ends (path, dest): the missing one is where it was going.
    const path = e.dest !== undefined && existsSync(e.path) ? e.dest : e.path;
    // Name the directory that is missing, not the file we were about to write into it.
    const missing = existsSync(dirname(path)) ? path : dirname(path);
    return new AppError(
      'START_FAILED',
      `cannot start the agent: ${missing} does not exist: mount the host directory there, or change agent.hostRoot or the agent.* path that names it`,
    );
  }
  if ((e?.code === 'EACCES' || e?.code === 'EROFS') && e.path)
    return new AppError(
      'START_FAILED',
      `cannot start the agent: ${e.path}: ${e.code} (mounted read-only, or not root?)`,
    );
  return err;
}

/**
 * One kubelet registration per resource; a configuration the node's devices contradict stops here.
 * gRPC and the API definition are loaded only by a process that serves one (#43: the agent as
 * shipped does not).
 */
async function devicePlugins(
  a: AgentConfig,
  discoverNow: () => ReturnType<typeof discover>,
  logger: Logger,
): Promise<ErdmaDevicePlugin[]> {
  const { ErdmaDevicePlugin } = await import('./deviceplugin/server.js');
  return servedResources(a, discoverNow).map((r) => {
    const log = logger.child({ resource: r.name });
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
  for (const p of plugins) await p.start();
  const probes = a.metricsEnabled
    ? await startProbeServer(a.metricsHost, a.metricsPort, {
        ready: () => {
          const waiting = plugins.filter((p) => !p.isRegistered).map((p) => p.resourceName);
          return waiting.length > 0
            ? `not registered with the kubelet yet: ${waiting.join(', ')}`
            : undefined;
        },
        metrics: metrics.registry,
      })
    : undefined;
  if (probes)
    io.out(`erdma-smcr device-plugin: probes on http://${a.metricsHost}:${probes.port}\n`);
  await runUntilSignal(logger, 'stopping the device plugins', async () => {
    for (const p of plugins) await p.stop();
    await probes?.close();
  });
}

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
      `removed erdma-smcr from the CNI configuration in ${join(a.hostRoot, a.cniConfDir)}, its binary, ` +
        `the preload library in ${join(a.hostRoot, a.preloadDir)} and the IPPROTO_SMC program's pins\n`,
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
  let probes: Awaited<ReturnType<typeof startProbeServer>> | undefined;
  try {
    for (const p of plugins) await p.start();
    await agent.start();
    probes = a.metricsEnabled
      ? await startProbeServer(a.metricsHost, a.metricsPort, {
          ready: () => agent.readiness(),
          metrics: metrics.registry,
        }).catch((err: unknown) => {
          throw listenFailure(
            err,
            `${a.metricsHost}:${a.metricsPort}`,
            'agent.metricsPort (ERDMA_SMCR_AGENT_METRICS_PORT)',
          );
        })
      : undefined;
  } catch (err) {
    // Nothing left running or behind: no duty, no device plugin socket.
    await agent.close();
    for (const p of plugins) await p.stop();
    throw startFailure(err);
  }
  if (probes)
    io.out(`erdma-smcr agent: metrics and probes on http://${a.metricsHost}:${probes.port}\n`);
  await runUntilSignal(logger, 'stopping the agent', async () => {
    await agent.close();
    for (const p of plugins) await p.stop();
    await probes?.close();
  });
}
