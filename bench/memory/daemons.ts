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
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageLayout, moduleListPreload, podEnv, type Layout } from '../env.js';
import { inCgroup, memoryCgroup, uncachedCopy, type CgroupMemory } from '../cgroup.js';
import { residentTogether } from '../pages.js';
import { skippedRow, type BenchRow } from '../report.js';
import { ensureLocalCerts } from '../../src/certs/local.js';
import { deploymentNodeFlags, deploymentNodeOptions } from '../scale.js';
import { cpuMicros, load, review, startChild, stop, type Server } from '../webhook.js';
import { freePort, startControlPlane } from '../../test/harness/k8s/control-plane.js';
import { FakeKubelet } from '../../test/helpers/fake-kubelet.js';
import { until } from '../../test/helpers/wait.js';
import {
  AGENT_YAML,
  Api,
  BUSY_NODE_PODS,
  DaemonSite,
  IDLE_SETTLE_MS,
  MB,
  Runtime,
  TARGET,
  apiFor,
  busyHost,
  daemonSetEnv,
  daemonSetNodeFlags,
  idle,
  idleRow,
  keepStderr,
  noKubernetesBinaries,
  officialRuntimes,
  otherNodeLines,
  probePorts,
  row,
  sleep,
  spawnBare,
  startAgent,
  startDaemon,
  status,
} from './instruments.js';

const SETTLED_MS = 20_000;

/** How long after its load `serve`'s resident set is read again. */
const AFTER_LOAD_MS = 20_000;

/**
 * When a daemon's idle CPU starts to be read: after V8's memory reducer has collected, once, what
 * start-up left (`--trace-gc`: about 12 s after start on Node 20, 30 s on Node 26). In a 30 s
 * window from 3 s those collections read as up to 0.5% of a core more (#43); that part is read on
 * its own and shown beside the row.
 */
const CPU_FROM_MS = 40_000;

/**
 * How long a daemon's idle CPU is read: two of the agent's longest periods (the 30 s refresh, with
 * its mechanism probe, and the SMC sample), 60 of the device plugin's 1 s device polls.
 */
const CPU_WINDOW_MS = 60_000;

const DEVICE_PLUGIN_YAML = 'manifests/base/device-plugin.yaml';
const DRA_YAML = 'manifests/components/dra/dra.yaml';

/**
 * Starts of a daemon whose idle figure is read: one reading 3 s after start moves by about ±1 MB
 * between starts of one build, with where start-up's collections fall, so a node daemon's idle row
 * is the median of this many starts (the range is in its notes).
 */
const IDLE_STARTS = 3;

/** Idle readings of `n` more starts of a daemon, one after another, each stopped after it. */
async function moreIdleReadings(start: () => Promise<ChildProcess>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const p = await start();
    try {
      out.push(await idle(p));
    } finally {
      await stop(p);
    }
  }
  return out;
}

interface CpuMark {
  readonly micros: number;
  readonly at: bigint;
}

/** A running child's CPU so far (utime + stime) and when it was read; a child that exited says why. */
function cpuMark(child: ChildProcess): CpuMark {
  status(child, 'VmRSS'); // throws, saying why, if the daemon has exited
  return { micros: cpuMicros(child.pid ?? 0), at: process.hrtime.bigint() };
}

/** CPU used between two marks, in % of one core. */
function cpuBetween(from: CpuMark, to: CpuMark): number {
  return (100 * (to.micros - from.micros)) / (Number(to.at - from.at) / 1e3);
}

function cpuRow(name: string, cpu: IdleCpu, what: string): BenchRow {
  const percent = cpu.steady;
  return {
    bench: 'memory',
    case: name,
    value: percent,
    unit: '% of a core',
    target: `target ≤ ${TARGET.agentCpu}%: ${percent <= TARGET.agentCpu ? 'met' : 'not met'}; over ${CPU_WINDOW_MS / 1000} s from ${CPU_FROM_MS / 1000} s after start (${what}); ${cpu.startTail.toFixed(2)}% from ${IDLE_SETTLE_MS / 1000} to ${CPU_FROM_MS / 1000} s, with start-up's collections; clock ticks of 10 ms`,
  };
}

interface IdleCpu {
  /** From IDLE_SETTLE_MS to CPU_FROM_MS: with the collections of what start-up left. */
  readonly startTail: number;
  /** Over CPU_WINDOW_MS from CPU_FROM_MS: what the daemon costs while it idles for days. */
  readonly steady: number;
}

/**
 * A daemon's idle CPU, from IDLE_SETTLE_MS after its start, and its resident set at SETTLED_MS
 * (`settled` is called then).
 */
async function idleCpu(child: ChildProcess, settled: () => void): Promise<IdleCpu> {
  const start = cpuMark(child);
  await sleep(SETTLED_MS - IDLE_SETTLE_MS);
  settled();
  await sleep(CPU_FROM_MS - SETTLED_MS);
  const from = cpuMark(child);
  await sleep(CPU_WINDOW_MS);
  return { startTail: cpuBetween(start, from), steady: cpuBetween(from, cpuMark(child)) };
}

async function serveRows(
  dir: string,
  base: number,
  extraArgs: string[],
  label: string,
  underLoad: boolean,
  layout: Layout,
  node = process.execPath,
): Promise<BenchRow[]> {
  const probePort = await freePort();
  const server: Server = await startChild(
    [
      ...layout.prefix,
      ...(layout.file ? [node] : []),
      ...deploymentNodeFlags(),
      layout.entry,
      'serve',
      '--port',
      '0',
      '--cert-dir',
      layout.certDir,
      '--log-level',
      'warn',
      '--metrics-port',
      String(probePort),
      ...extraArgs,
    ],
    /listening on https:\/\/127\.0\.0\.1:(\d+)/,
    // As its Deployment runs it.
    { NODE_OPTIONS: deploymentNodeOptions() },
    layout.file || node,
  );
  // The kubelet probes its pod as it does the daemons' (its Deployment's probes on the metrics port).
  probePorts.set(server.child, probePort);
  try {
    const rows = [
      row(`serve (${label}), idle`, await idle(server.child), base, TARGET.serveIdle, layout.note),
    ];
    if (underLoad) {
      const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
      const r = await load(server, '/mutate', review(true), ca, 5);
      rows.push(
        row(
          `serve (${label}), peak under load`,
          status(server.child, 'VmHWM'),
          base,
          TARGET.servePeak,
          `${Math.round(r.rps)} req/s of SMC-R reviews for 5 s`,
        ),
      );
      // What it keeps of the burst: on Node 22 and later, Maglev's compilations left about 20 MB
      // more here than without it (docs/benchmarks.md, "Maglev and the webhook").
      await sleep(AFTER_LOAD_MS);
      rows.push(
        row(
          `serve (${label}), ${AFTER_LOAD_MS / 1000} s after its load`,
          status(server.child, 'VmRSS'),
          base,
          undefined,
          'what a webhook that has served a burst holds; the targets are read above',
        ),
      );
    }
    return rows;
  } finally {
    await stop(server.child);
  }
}

/** Calls the registered plugin as a kubelet placing pods would, 4 calls at a time, for `ms`; returns the pairs made. */
async function allocateFor(kubelet: FakeKubelet, ms: number): Promise<number> {
  await until(
    'the agent to register its device plugin',
    () => kubelet.updates.length > 0 || undefined,
    { timeoutMs: 20_000, details: () => kubelet.errors.join('; ') },
  );
  const ids = (kubelet.updates[kubelet.updates.length - 1] ?? []).map((d) => d.ID);
  const end = Date.now() + ms;
  let pairs = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < end) {
      const preferred = await kubelet.unary<{ container_responses: { deviceIDs: string[] }[] }>(
        'GetPreferredAllocation',
        {
          container_requests: [
            { available_deviceIDs: ids, must_include_deviceIDs: [], allocation_size: 1 },
          ],
        },
      );
      await kubelet.unary('Allocate', {
        container_requests: [
          { devicesIDs: preferred.container_responses[0]?.deviceIDs ?? ids.slice(0, 1) },
        ],
      });
      pairs++;
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return pairs;
}

/**
 * The agent as on a node, talking to the harness's real API server (its Node's labels, its pods'
 * watch, events over TLS), and its floor with the same watch: measured while the control plane
 * runs, which is stopped before the rows that load the machine.
 */
async function agentLiveRows(
  site: DaemonSite,
  api: Api,
  base: number,
  on: string,
): Promise<BenchRow[]> {
  const start = (env: Record<string, string> = {}): Promise<ChildProcess> =>
    startAgent(site, { ERDMA_SMCR_NODE_NAME: api.nodeName, ...env }, api.cp.kubeconfig);
  // The DRA driver (#86 item 8), which also talks to the API server (its Node, its ResourceSlice),
  // beside the device plugin's rows of the same run.
  const startDra = (): Promise<ChildProcess> =>
    startDaemon(
      site,
      'dra-plugin',
      DRA_YAML,
      { ERDMA_SMCR_NODE_NAME: api.nodeName },
      api.cp.kubeconfig,
    );
  return [
    idleRow(
      `DRA driver (its own DaemonSet: its ResourceSlice published, plugin sockets served)${on}, idle`,
      await moreIdleReadings(startDra, IDLE_STARTS),
      base,
    ),
    await floorRow(site.node, 'agent', AGENT_YAML, start, base, on, api),
    idleRow(
      `agent as shipped with the API server (its Node's labels, its pods' watch, events)${on}, idle`,
      await moreIdleReadings(start, IDLE_STARTS),
      base,
    ),
  ];
}

async function daemonRows(
  site: DaemonSite,
  kubelet: FakeKubelet,
  base: number,
  on: string,
  before: boolean,
): Promise<BenchRow[]> {
  const { node } = site;
  const rows: BenchRow[] = [];
  const start = (
    command: string,
    manifest: string,
    env: Record<string, string> = {},
  ): Promise<ChildProcess> => startDaemon(site, command, manifest, env);
  rows.push(await floorRow(node, 'agent', AGENT_YAML, (env) => startAgent(site, env), base, on));
  rows.push(
    await floorRow(
      node,
      'device plugin',
      DEVICE_PLUGIN_YAML,
      (env) => start('device-plugin', DEVICE_PLUGIN_YAML, env),
      base,
      on,
    ),
  );
  const agentReadings = await moreIdleReadings(() => startAgent(site), IDLE_STARTS - 1);
  const agent = await startAgent(site);
  try {
    agentReadings.push(await idle(agent));
    rows.push(
      idleRow(
        `agent as shipped (no device plugin: discovery, CNI chaining, metrics)${on}, idle`,
        agentReadings,
        base,
      ),
    );
    // A daemon idles for days: after some seconds V8's memory reducer collects what start-up
    // left behind. Its resident set then is reported beside the 3 s figure, which stays the one
    // the target is read on; its CPU after those collections, over a window that holds its
    // periodic work.
    const cpu = await idleCpu(agent, () =>
      rows.push(
        row(
          `agent as shipped${on}, idle ${SETTLED_MS / 1000} s after start`,
          status(agent, 'VmRSS'),
          base,
          undefined,
          "after V8's idle-time collection; the target is read on the row above",
        ),
      ),
    );
    rows.push(
      cpuRow(
        `agent as shipped${on}, idle CPU`,
        cpu,
        'refreshes with the mechanism probe, SMC samples, CNI checks, metrics',
      ),
    );
  } finally {
    await stop(agent);
  }
  // The device plugin runs on every eRDMA node too: the agent's targets apply to it.
  const plugins: (readonly [string, string, string])[] = [
    ['device-plugin', DEVICE_PLUGIN_YAML, `device-plugin (its own DaemonSet)${on}`],
  ];
  if (before)
    plugins.push([
      'agent',
      AGENT_YAML,
      'agent with the device plugin in one process (before the split)',
    ]);
  for (const [command, manifest, name] of plugins) {
    const readings = await moreIdleReadings(() => start(command, manifest), IDLE_STARTS - 1);
    kubelet.updates.length = 0; // what the starts above listed: the load waits for this one's
    const p = await start(command, manifest);
    try {
      readings.push(await idle(p));
      rows.push(idleRow(`${name}, idle`, readings, base));
      if (command === 'device-plugin') {
        // As the agent's: the settled figure beside the 3 s one, then the idle CPU.
        const cpu = await idleCpu(p, () =>
          rows.push(
            row(
              `${name}, idle ${SETTLED_MS / 1000} s after start`,
              status(p, 'VmRSS'),
              base,
              undefined,
              "after V8's idle-time collection; the target is read on the row above",
            ),
          ),
        );
        rows.push(
          cpuRow(
            `${name}, idle CPU`,
            cpu,
            `registered with the stand-in kubelet, polling its devices each second; ${BUSY_NODE_PODS} pods' veths on the host`,
          ),
        );
      }
      const pairs = await allocateFor(kubelet, 5000);
      rows.push(
        row(
          `${name}, peak under load`,
          status(p, 'VmHWM'),
          base,
          TARGET.agentPeak,
          `${Math.round(pairs / 5)} GetPreferredAllocation + Allocate pairs/s for 5 s from a stand-in kubelet`,
        ),
      );
    } finally {
      await stop(p);
      kubelet.updates.length = 0;
    }
  }
  rows.push(await sideBySideRow(site, () => start('device-plugin', DEVICE_PLUGIN_YAML), on));
  rows.push(...(await kubeletViewRows(site, on)));
  kubelet.updates.length = 0;
  return rows;
}

const isRoot = (): boolean => process.getuid?.() === 0;

/** Why the rows that read other processes' page frames and make memory cgroups are skipped. */
const NEEDS_ROOT =
  'needs root: page frame numbers (/proc/<pid>/pagemap) and memory cgroups; run the bench as root';

/** Two processes idling side by side: what each holds, and both, each page once (bench/pages.ts). */
interface Pair {
  readonly rss: readonly number[];
  readonly anon: readonly number[];
  readonly together: number;
}

async function pairIdle(a: ChildProcess, b: ChildProcess): Promise<Pair> {
  await Promise.all([idle(a), idle(b)]);
  return {
    rss: [status(a, 'VmRSS'), status(b, 'VmRSS')],
    anon: [status(a, 'RssAnon'), status(b, 'RssAnon')],
    together: residentTogether([a.pid ?? 0, b.pid ?? 0]).together,
  };
}

/**
 * The agent and the device plugin idling side by side, as a node runs the two DaemonSets from one
 * image: what the node holds for both, each page once. Their rows' VmRSS figures each count the
 * pages of `node` and its libraries, which the kernel holds once for both (one image layer,
 * bench/pages.ts). Against two bare `node`s side by side on the same executable; the median of
 * IDLE_STARTS pairs. A skipped row says why when the pages cannot be told apart (not root).
 */
async function sideBySideRow(
  site: DaemonSite,
  startPlugin: () => Promise<ChildProcess>,
  on: string,
): Promise<BenchRow> {
  const name = `agent and device plugin side by side (both DaemonSets on one node, one image)${on}, idle, each page counted once`;
  const mb = (b: number): string => (b / MB).toFixed(2);
  if (!isRoot()) return skippedRow('memory', name, NEEDS_ROOT);
  const bares = [spawnBare(site.node), spawnBare(site.node)] as const;
  let bare: Pair;
  try {
    bare = await pairIdle(...bares);
  } finally {
    for (const b of bares) b.kill('SIGKILL');
  }
  const pairs: Pair[] = [];
  for (let i = 0; i < IDLE_STARTS; i++) {
    const agent = await startAgent(site);
    try {
      const plugin = await startPlugin();
      try {
        pairs.push(await pairIdle(agent, plugin));
      } finally {
        await stop(plugin);
      }
    } finally {
      await stop(agent);
    }
  }
  pairs.sort((x, y) => x.together - y.together);
  const p = pairs[Math.floor(pairs.length / 2)] as Pair;
  const [agentRss = 0, pluginRss = 0] = p.rss;
  const [agentAnon = 0, pluginAnon = 0] = p.anon;
  return {
    bench: 'memory',
    case: name,
    value: p.together / MB,
    unit: 'MB resident',
    ratio: p.together / bare.together,
    target: `against two bare \`node\`s side by side (${mb(bare.together)} MB; VmRSS ${mb(bare.rss[0] ?? 0)} + ${mb(bare.rss[1] ?? 0)}); median of ${pairs.length} pairs, ${mb(pairs[0]?.together ?? 0)}–${mb(pairs.at(-1)?.together ?? 0)} MB; VmRSS ${mb(agentRss)} + ${mb(pluginRss)} = ${mb(agentRss + pluginRss)} MB, ${mb(agentRss + pluginRss - p.together)} MB of it pages both map (node's executable, its libraries), held once; anonymous ${mb(agentAnon)} + ${mb(pluginAnon)} MB`,
  };
}

/** One start of the two daemons in memory cgroups of their own, as the kubelet reads them. */
interface ContainerPair {
  readonly plugin: CgroupMemory;
  readonly agent: CgroupMemory;
}

/**
 * The device plugin, then the agent, each in a memory cgroup of its own as in its container, on a
 * copy of `node` none of whose pages are in memory (a node that has not run it since it booted):
 * both idle, then their cgroups are read (bench/cgroup.ts).
 */
async function containerPair(site: DaemonSite, dir: string): Promise<ContainerPair> {
  const node = uncachedCopy(site.node, dir);
  const tag = `erdma-bench-${process.pid}-${Date.now()}`;
  const cgroups = [memoryCgroup(`${tag}-plugin`), memoryCgroup(`${tag}-agent`)] as const;
  const [pluginCg, agentCg] = cgroups;
  try {
    const plugin = await startDaemon(
      { ...site, node, launch: (f, a) => inCgroup(pluginCg, f, a) },
      'device-plugin',
      DEVICE_PLUGIN_YAML,
    );
    try {
      await idle(plugin);
      const agent = await startAgent({ ...site, node, launch: (f, a) => inCgroup(agentCg, f, a) });
      try {
        await idle(agent);
        return { plugin: pluginCg.read(), agent: agentCg.read() };
      } finally {
        await stop(agent);
      }
    } finally {
      await stop(plugin);
    }
  } finally {
    for (const c of cgroups) c.remove();
  }
}

/**
 * The daemons' containers as the kubelet reads them: each one's working set (its cgroup's usage
 * less inactive file pages; what `kubectl top` shows and the kubelet evicts on), the device plugin
 * started first on a node that has not run `node`, then the agent (no API server). Medians of
 * IDLE_STARTS pairs. Skipped rows say why when there are no memory cgroups to make (not root).
 */
async function kubeletViewRows(site: DaemonSite, on: string): Promise<BenchRow[]> {
  const names = {
    plugin: `device plugin's container, started first on a node that has not run node${on}, idle: its working set as the kubelet reads it`,
    agent: `agent's container, started after it${on}, idle: its working set as the kubelet reads it`,
  };
  if (!isRoot()) return Object.values(names).map((name) => skippedRow('memory', name, NEEDS_ROOT));
  const dir = mkdtempSync(join(tmpdir(), 'bench-kubelet-'));
  try {
    const pairs: ContainerPair[] = [];
    for (let i = 0; i < IDLE_STARTS; i++) {
      const d = join(dir, String(i));
      mkdirSync(d);
      pairs.push(await containerPair(site, d));
    }
    const mb = (b: number): string => (b / MB).toFixed(2);
    return (['plugin', 'agent'] as const).map((who) => {
      const all = pairs.map((p) => p[who]).sort((x, y) => x.workingSet - y.workingSet);
      const m = all[Math.floor(all.length / 2)] as CgroupMemory;
      return {
        bench: 'memory',
        case: names[who],
        value: m.workingSet / MB,
        unit: 'MB working set',
        target: `median of ${all.length} starts, ${mb(all[0]?.workingSet ?? 0)}–${mb(all.at(-1)?.workingSet ?? 0)} MB; its cgroup is charged ${mb(m.usage)} MB: ${mb(m.anon)} anonymous, ${mb(m.file)} of files (${mb(m.inactiveFile)} inactive, read once, which the working set leaves out; ${mb(m.mappedFile)} mapped, which count once the kernel finds them in use)`,
      };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The public built-in modules a daemon has loaded once it idles, from a start of its own with a
 * preload (in NODE_OPTIONS) that lists them: the starts whose figures are reported run as shipped.
 */
async function builtinsLoaded(
  start: (env: Record<string, string>) => Promise<ChildProcess>,
  manifest: string,
): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-builtins-'));
  try {
    const list = join(dir, 'modules.json');
    const preload = join(dir, 'list-modules.cjs');
    writeFileSync(preload, moduleListPreload(list));
    const p = await start({
      NODE_OPTIONS: `${daemonSetEnv('NODE_OPTIONS', manifest)} --require ${preload}`,
    });
    try {
      await idle(p);
      await sleep(200); // the preload's next listing, after the probes' answers
    } finally {
      await stop(p);
    }
    const loaded = JSON.parse(readFileSync(list, 'utf8')) as string[];
    return loaded
      .filter((e) => e.startsWith('NativeModule '))
      .map((e) => e.slice('NativeModule '.length))
      .filter((id) => !id.startsWith('internal/'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A daemon's floor (bench/daemon-floor.cjs): `node` with the daemon's flags and NODE_OPTIONS,
 * loading the built-ins the daemon loads and listening as it does, probed as the daemon is,
 * without any of our code. Above it is what our code and our dependencies hold; below it is
 * Node's on that runtime, whatever the code.
 */
async function floorRow(
  node: string,
  what: string,
  manifest: string,
  start: (env: Record<string, string>) => Promise<ChildProcess>,
  base: number,
  on: string,
  api?: Api,
): Promise<BenchRow> {
  const builtins = await builtinsLoaded(start, manifest);
  const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
  const port = await freePort();
  // The device plugin serves the kubelet's gRPC over HTTP/2 on a unix socket.
  const socket = manifest === DEVICE_PLUGIN_YAML ? [join(dir, 'floor.sock')] : [];
  const floor = keepStderr(
    spawn(
      node,
      [...daemonSetNodeFlags(manifest), 'bench/daemon-floor.cjs', builtins.join(','), ...socket],
      {
        env: podEnv({
          NODE_OPTIONS: daemonSetEnv('NODE_OPTIONS', manifest),
          ERDMA_SMCR_AGENT_METRICS_PORT: String(port),
          ...(api
            ? { FLOOR_API_URL: api.cp.url, FLOOR_API_CA: api.caFile, FLOOR_API_TOKEN: api.cp.token }
            : {}),
        }),
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    ),
  );
  probePorts.set(floor, port);
  try {
    return row(
      `the ${what}'s floor${api ? ' with the API server' : ''}${on}: its flags, the ${builtins.length} built-in modules it loads, its servers${api ? ', a watch over TLS' : ''}; none of our code`,
      await idle(floor),
      base,
      undefined,
      `what Node holds for any ${what} on this runtime; what the ${what} holds above it is ours`,
    );
  } finally {
    await stop(floor);
    rmSync(dir, { recursive: true, force: true });
  }
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
    for (const rt of runtimes)
      rows.push(...(await agentLiveRows({ node: rt.node, host }, api, rt.base, rt.on)));
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
