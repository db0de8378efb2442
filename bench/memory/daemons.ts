// Memory of the long-running processes (#25, #43): resident set (VmRSS) idle and the peak (VmHWM)
// under load, read from /proc/<pid>/status of the real CLI (the bundle, as shipped) run as a child:
// - bare `node` idling (the baseline, same run);
// - `serve` with the offline cluster view: idle, then after 5 s of SMC-R reviews on 16 connections,
//   and again 20 s after that load (what it keeps of a burst); run from a path as long as the
//   image's /app (bench/env.ts, imageLayout);
// - `serve` with the live cluster view (watches Nodes and the profile ConfigMap of the harness's
//   real 1.37 API server; skipped when its binaries are not built);
// - `agent` as its DaemonSet runs it (no device plugin) on a fixture host tree without a cluster,
//   with the veths of a busy node's 110 pods (device discovery, CNI chaining, metrics): idle, and
//   its idle CPU (utime + stime from /proc/<pid>/stat) over 60 s from 40 s after start;
// - the agent again with the harness's real API server, as on a node (its Node's labels, its pods'
//   watch, events: TLS connections the other agent rows do not hold), on each runtime, when its
//   binaries are built; the control plane is stopped before the daemons' other rows;
// - each daemon's floor (bench/daemon-floor.cjs): `node` with its flags, the built-in modules it
//   loads and the servers it listens with (and the agent's TLS watch, for the agent with the API
//   server), and none of our code: what Node holds for any daemon;
// - `device-plugin`, and the agent with the device plugin in one process as before the split,
//   registered with a stand-in kubelet (test/helpers/fake-kubelet.ts): idle (the device plugin's
//   idle CPU as the agent's), then the peak after 5 s of GetPreferredAllocation and Allocate calls over
//   its gRPC socket;
// - serve (offline view), the agent and the device plugin again on the Node.js the image ships
//   (the official build of the Dockerfile's major, fetched once from the npm registry into the
//   cache), with that executable's own bare baseline: the figures above are this machine's Debian
//   Node 20.
// Each with the Node flags and NODE_OPTIONS of its manifest, in a pod's environment (bench/env.ts).
// Each is probed as the kubelet probes its pod (readiness, then liveness) before its idle figure
// is read.
// A node daemon's idle figure is the median of three starts (IDLE_STARTS).
// This file orders the rows; each daemon's are in a file of its own (serve.ts, agent.ts,
// device-plugin.ts, dra.ts), with how idle is read (idle.ts) and each daemon's floor (floor.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageLayout, type Layout } from '../env.js';
import { skippedRow, type BenchRow } from '../report.js';
import { ensureLocalCerts } from '../../src/certs/local.js';
import { startControlPlane } from '../../test/harness/k8s/control-plane.js';
import { FakeKubelet } from '../../test/helpers/fake-kubelet.js';
import {
  AGENT_YAML,
  DEVICE_PLUGIN_YAML,
  DaemonSite,
  Runtime,
  apiFor,
  busyHost,
  idle,
  noKubernetesBinaries,
  officialRuntimes,
  otherNodeLines,
  row,
  spawnBare,
  startAgent,
  startDaemon,
} from './instruments.js';
import { agentLiveRows, agentRows } from './agent.js';
import { devicePluginRows } from './device-plugin.js';
import { draLiveRows } from './dra.js';
import { floorRow } from './floor.js';
import { serveRows } from './serve.js';

/** The node daemons without a cluster: each one's floor, the agent, then the device plugin. */
async function daemonRows(
  site: DaemonSite,
  kubelet: FakeKubelet,
  base: number,
  on: string,
  before: boolean,
): Promise<BenchRow[]> {
  return [
    await floorRow(site.node, 'agent', AGENT_YAML, (env) => startAgent(site, env), base, on),
    await floorRow(
      site.node,
      'device plugin',
      DEVICE_PLUGIN_YAML,
      (env) => startDaemon(site, 'device-plugin', DEVICE_PLUGIN_YAML, env),
      base,
      on,
    ),
    ...(await agentRows(site, base, on)),
    ...(await devicePluginRows(site, kubelet, base, on, before)),
  ];
}

/**
 * With the harness's real API server (when its binaries are built): `serve`'s live view, and the
 * agent talking to it on each runtime. The control plane is stopped before the rows that load the
 * machine, so that its idle work takes nothing from them.
 */
async function liveRows(
  dir: string,
  layout: Layout,
  host: string,
  runtimes: readonly [Runtime, ...Runtime[]],
): Promise<BenchRow[]> {
  const missing = noKubernetesBinaries();
  if (missing)
    return [skippedRow('memory', '`serve` (live view) and the agent with the API server', missing)];
  const cp = await startControlPlane();
  try {
    const [here] = runtimes;
    const rows = await serveRows(
      dir,
      here.base,
      ['--cluster', 'live', '--kubeconfig', cp.kubeconfig],
      'live view: watches of the real API server',
      true,
      layout,
    );
    const api = await apiFor(cp, dir);
    for (const rt of runtimes) {
      const site = { node: rt.node, host };
      rows.push(...(await draLiveRows(site, api, rt.base, rt.on)));
      rows.push(...(await agentLiveRows(site, api, rt.base, rt.on)));
    }
    return rows;
  } finally {
    await cp.stop();
  }
}

export async function benchMemory(): Promise<BenchRow[]> {
  otherNodeLines(); // a bad ERDMA_SMCR_BENCH_NODE_LINES says so before anything starts
  const dir = mkdtempSync(join(tmpdir(), 'bench-memory-'));
  const rows: BenchRow[] = [];
  // Each runtime's bare `node` idles for the whole bench, its baseline read first.
  const runtimes: Runtime[] = [
    { node: process.execPath, on: '', bare: spawnBare(process.execPath), base: 0 },
  ];
  try {
    officialRuntimes(runtimes, rows);
    for (const rt of runtimes) {
      rt.base = await idle(rt.bare);
      rows.push(
        rt.on
          ? row(`bare \`node\`${rt.on} idling (its baseline)`, rt.base, rt.base)
          : row('bare `node` idling (baseline)', rt.base, rt.base),
      );
    }
    const [here, ...official] = runtimes as [Runtime, ...Runtime[]];
    // The webhook as it runs: its certificates exist (a Secret, or mounted files). Making them
    // loads node-forge, which a webhook restarted with its certificates never does.
    ensureLocalCerts({ dir, service: 'erdma-smcr-webhook', namespace: 'erdma-smcr' });
    const layout = imageLayout(dir);
    rows.push(...(await serveRows(dir, here.base, [], 'offline view', true, layout)));
    const host = busyHost(dir);
    rows.push(...(await liveRows(dir, layout, host, [here, ...official])));
    const kubelet = new FakeKubelet(join(host, 'kubelet'));
    await kubelet.start();
    try {
      rows.push(...(await daemonRows({ node: here.node, host }, kubelet, here.base, '', true)));
      // What ships: the image runs the official build of the Dockerfile's Node major, whose
      // binary and heap are larger than this machine's Debian build of Node 20.
      for (const rt of official) {
        rows.push(
          ...(await serveRows(dir, rt.base, [], `offline view${rt.on}`, true, layout, rt.node)),
          ...(await daemonRows({ node: rt.node, host }, kubelet, rt.base, rt.on, false)),
        );
      }
    } finally {
      await kubelet.stop();
    }
    return rows;
  } finally {
    for (const rt of runtimes) rt.bare.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
