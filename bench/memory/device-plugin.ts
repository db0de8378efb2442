// The device plugin's rows of the memory bench: idle (and the agent with the device plugin in one
// process, as before the split), its idle CPU, its peak under GetPreferredAllocation and Allocate
// calls from a stand-in kubelet, and beside the agent: side by side and as the kubelet reads the
// two containers.
import { type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inCgroup, memoryCgroup, uncachedCopy, type CgroupMemory } from '../cgroup.js';
import { residentTogether } from '../pages.js';
import { skippedRow, type BenchRow } from '../report.js';
import { stop } from '../webhook.js';
import { FakeKubelet } from '../../test/helpers/fake-kubelet.js';
import { until } from '../../test/helpers/wait.js';
import {
  AGENT_YAML,
  DEVICE_PLUGIN_YAML,
  BUSY_NODE_PODS,
  DaemonSite,
  MB,
  TARGET,
  idle,
  idleRow,
  row,
  spawnBare,
  startAgent,
  startDaemon,
  status,
} from './instruments.js';
import { cpuRow, IDLE_STARTS, idleCpu, moreIdleReadings, SETTLED_MS } from './idle.js';

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
 * The device plugin (and, on the first runtime, the agent with the device plugin in one process,
 * as before the split): idle, its settled figure and idle CPU, its peak under calls; then beside
 * the agent, side by side and as the kubelet reads the two containers.
 */
export async function devicePluginRows(
  site: DaemonSite,
  kubelet: FakeKubelet,
  base: number,
  on: string,
  before: boolean,
): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const start = (
    command: string,
    manifest: string,
    env: Record<string, string> = {},
  ): Promise<ChildProcess> => startDaemon(site, command, manifest, env);
  // The device plugin runs on every eRDMA node too: the agent's targets apply to it.
  const plugins: (readonly [string, string, string, Record<string, string>])[] = [
    ['device-plugin', DEVICE_PLUGIN_YAML, `device-plugin (its own DaemonSet)${on}`, {}],
  ];
  if (before)
    plugins.push([
      'agent',
      AGENT_YAML,
      'agent with the device plugin in one process (before the split)',
      { ERDMA_SMCR_AGENT_DEVICE_PLUGIN: 'true' },
    ]);
  for (const [command, manifest, name, env] of plugins) {
    const readings = await moreIdleReadings(() => start(command, manifest, env), IDLE_STARTS - 1);
    kubelet.updates.length = 0; // what the starts above listed: the load waits for this one's
    const p = await start(command, manifest, env);
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
