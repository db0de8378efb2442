// The DRA driver process behind `erdma-smcr dra-plugin` (#86), in a DaemonSet of its own as the
// device plugin has (manifests/overlays/dra): the kubelet plugin (registration and the DRAPlugin
// service, ../dra/plugin.ts), the node's ResourceSlice kept true (../dra/publisher.ts,
// with a watch on the slice so that one the kubelet wiped comes back at once), and its probes.
import { posix } from 'node:path';
import type { Config } from '../config/schema.js';
import { AppError } from '../errors.js';
import type { CliIO } from '../util/io.js';
import { createLogger } from '../util/log.js';
import { runUntilSignal } from '../util/signals.js';
import type { ProbeServer } from '../util/probes.js';
import { DraPluginMetrics } from '../dra/metrics.js';
import { startDaemonProbes } from './probes.js';
import { discover, DiscoveryCache, discoveryOptions } from '../devices/discovery.js';
import type { SliceSpec } from '../dra/slice.js';
import { DRA_DRIVER } from '../dra/claim.js';
import { startFailure } from './startup.js';

export async function runDraPlugin(config: Readonly<Config>, io: CliIO): Promise<void> {
  const logger = createLogger(config.logLevel);
  const a = config.agent;
  if (!a.nodeName)
    throw new AppError(
      'USAGE',
      'the DRA driver needs its node: set agent.nodeName (ERDMA_SMCR_NODE_NAME from spec.nodeName, or --node-name)',
    );
  const nodeName = a.nodeName;
  const [
    { loadKubeClient },
    { WatchedSet },
    { DraPlugin },
    { SlicePublisher },
    { CdiSpecs },
    { Checkpoint },
    slice,
    grpc,
  ] = await Promise.all([
    import('../cluster/kubeconfig.js'),
    import('../cluster/watch.js'),
    import('../dra/plugin.js'),
    import('../dra/publisher.js'),
    import('../dra/cdi.js'),
    import('../dra/checkpoint.js'),
    import('../dra/slice.js'),
    import('../kubelet/serve.js'),
  ]);
  grpc.grpcLogsTo(logger);
  const client = await loadKubeClient(config.cluster.kubeconfig, io.env);
  const cache = new DiscoveryCache();
  const discoverNow = (): ReturnType<typeof discover> => discover(discoveryOptions(a), cache);
  const publisher = new SlicePublisher({
    client,
    nodeName,
    discover: discoverNow,
    slots: a.slotsPerDevice,
    resyncMs: a.sliceResyncMs,
    logger,
  });
  const plugin = new DraPlugin({
    kubeletDir: a.kubeletDir,
    nodeName,
    client,
    discover: discoverNow,
    specs: new CdiSpecs(a.cdiDir, a.deviceRoot),
    checkpoint: new Checkpoint(posix.join(a.kubeletDir, 'plugins', DRA_DRIVER)),
    mechanism: () => slice.nodeMechanism(publisher.lastNode),
    logger,
    onRegistered: () => {
      publisher.invalidate();
      void publish();
    },
  });
  // One pass, one reading of the devices: the slice kept true, then their health to the kubelet
  // and the claims.
  let passing: Promise<void> | undefined;
  const publish = (): Promise<void> =>
    (passing ??= publisher
      .pass()
      .then(() => plugin.observe(publisher.devices))
      .finally(() => (passing = undefined)));
  // Our slice as the API has it: deleted (the kubelet wipes a driver's slices when it starts) or
  // changed by someone else, it is written again now, not at the next resync.
  type Stored = { metadata?: { name?: string }; spec?: SliceSpec };
  const watched = new WatchedSet<Stored>(client, {
    path: '/apis/resource.k8s.io/v1/resourceslices',
    fieldSelector: `metadata.name=${slice.sliceName(nodeName)}`,
    logger,
    onChange: (change) => {
      if (change === undefined) return;
      if (!publisher.matches(change.kept?.spec)) {
        publisher.invalidate();
        void publish();
      }
    },
  });
  const metrics = new DraPluginMetrics(() => ({
    registered: plugin.registered,
    prepared: plugin.prepared().length,
    sliceWrites: publisher.writes,
    sliceProblem: publisher.problem !== undefined,
  }));
  let probes: ProbeServer | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await publish();
    await plugin.start();
    await watched.start();
    timer = setInterval(() => void publish(), a.pollMs);
    probes = await startDaemonProbes(a, {
      ready: () =>
        !plugin.registered
          ? `not registered with the kubelet yet${plugin.registrationError ? `: ${plugin.registrationError}` : ''}`
          : publisher.problem,
      metrics: metrics.registry,
    });
  } catch (err) {
    clearInterval(timer);
    await watched.close();
    await plugin.stop();
    throw startFailure('DRA driver', err);
  }
  io.out(
    `erdma-smcr dra-plugin: driver ${DRA_DRIVER} on ${nodeName}, socket ${plugin.draSocket}${probes ? `, probes on http://${a.metricsHost}:${probes.port}` : ''}\n`,
  );
  await runUntilSignal(logger, 'stopping the DRA driver', async () => {
    clearInterval(timer);
    await watched.close();
    await plugin.stop();
    await probes?.close();
  });
}
