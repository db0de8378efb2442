// What the memory benchmarks measure with (./daemons.ts, ./agent-pods.ts): a child's resident set
// and CPU from /proc, probes as the kubelet makes them, the daemons started as their manifests
// start them, the harness's API server and the other Node.js lines.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import jsyaml from 'js-yaml';
import { officialNode, podEnv, shippedMajor } from '../env.js';
import { skippedRow, type BenchRow } from '../report.js';
import { commandNodeFlags, type Container } from '../scale.js';
import {
  binariesPresent,
  freePort,
  type ControlPlane,
} from '../../test/harness/k8s/control-plane.js';
import { fixtureHost } from '../../test/helpers/sysfs.js';

export const IDLE_SETTLE_MS = 3000;

export const MB = 1e6;

/** Pods (each with a veth on the host) on the node the daemons are measured on. */
export const BUSY_NODE_PODS = 110;

export const AGENT_YAML = 'manifests/base/agent.yaml';
export const DEVICE_PLUGIN_YAML = 'manifests/base/device-plugin.yaml';

/** #43's targets: within about 2x of a Go peer, on every node. */
export const TARGET = {
  serveIdle: 64 * MB,
  servePeak: 96 * MB,
  agentIdle: 50 * MB,
  agentPeak: 64 * MB,
  /** Idle CPU of a node daemon, in % of a core. */
  agentCpu: 0.5,
};

/** A figure of /proc/<pid>/status of a child that must still run (a daemon that exited says why). */
export function status(child: ChildProcess, key: 'VmRSS' | 'VmHWM' | 'RssAnon'): number {
  if (child.exitCode !== null || child.signalCode !== null)
    throw new Error(
      `${child.spawnargs.slice(1).join(' ')} exited (${child.exitCode ?? child.signalCode}) before it was measured: ${stderrTail.get(child)?.trim() || 'no stderr'}`,
    );
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(
    readFileSync(`/proc/${child.pid}/status`, 'utf8'),
  );
  return Number(m?.[1] ?? 0) * 1024;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What a child wrote to stderr, its last 2 KB (why a daemon exited; not kept beyond that). */
export const stderrTail = new WeakMap<ChildProcess, string>();

export function keepStderr(child: ChildProcess): ChildProcess {
  stderrTail.set(child, '');
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderrTail.set(child, ((stderrTail.get(child) ?? '') + d).slice(-2048));
  });
  return child;
}

/** The port of a process's probe server (a daemon's ERDMA_SMCR_AGENT_METRICS_PORT), which the kubelet probes. */
export const probePorts = new WeakMap<ChildProcess, number>();

/** One HTTP GET as the kubelet's prober makes it (no keep-alive); its status, or undefined if refused. */
export function kubeProbe(port: number, path: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = httpGet(
      { host: '127.0.0.1', port, path, agent: false, headers: { 'User-Agent': 'kube-probe/1.20' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.setTimeout(1000, () => req.destroy());
    req.on('error', () => resolve(undefined));
  });
}

/**
 * The kubelet probes a pod from its start (the manifests set no initial delay): its
 * readiness probe until the probe server answers, then its liveness probe. An answer costs the
 * process what any HTTP response does (a `Date` header, V8's time zone), so the idle figure is read
 * after them, as on a node.
 */
export async function probedAsKubelet(
  child: ChildProcess,
  port: number,
  withinMs: number,
): Promise<void> {
  const end = Date.now() + withinMs;
  while ((await kubeProbe(port, '/readyz')) === undefined) {
    status(child, 'VmRSS'); // throws, saying why, if the daemon has exited
    if (Date.now() > end) throw new Error(`nothing answered the readiness probe on port ${port}`);
    await sleep(100);
  }
  await kubeProbe(port, '/healthz');
}

export async function idle(child: ChildProcess): Promise<number> {
  const t0 = Date.now();
  const port = probePorts.get(child);
  if (port !== undefined) await probedAsKubelet(child, port, IDLE_SETTLE_MS);
  await sleep(IDLE_SETTLE_MS - (Date.now() - t0));
  return status(child, 'VmRSS');
}

/** A daemon's idle row: the median of its starts' readings, against the 50 MB target. */
export function idleRow(name: string, readings: number[], base: number): BenchRow {
  const sorted = [...readings].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  const mb = (b: number): string => (b / MB).toFixed(2);
  return row(
    name,
    median,
    base,
    TARGET.agentIdle,
    `median of ${sorted.length} starts, ${mb(sorted[0] ?? 0)}–${mb(sorted.at(-1) ?? 0)} MB`,
  );
}

export function row(
  name: string,
  bytes: number,
  base: number,
  target?: number,
  extra?: string,
): BenchRow {
  const met =
    target === undefined
      ? ''
      : `target ≤ ${target / MB} MB: ${bytes <= target ? 'met' : 'not met'}`;
  return {
    bench: 'memory',
    case: name,
    value: bytes / MB,
    unit: 'MB RSS',
    ratio: bytes / base,
    ...(met || extra ? { target: [met, extra].filter(Boolean).join('; ') } : {}),
  };
}

export function daemonSetContainer(file: string): Container {
  // The DaemonSet among the file's documents (the DRA component's file holds its RBAC and class too).
  const ds = (
    jsyaml.loadAll(readFileSync(file, 'utf8')) as {
      kind?: string;
      spec: { template: { spec: { containers: Container[] } } };
    }[]
  ).find((d) => d?.kind === 'DaemonSet');
  if (!ds) throw new Error(`${file} has no DaemonSet`);
  const c = ds.spec.template.spec.containers[0];
  if (!c) throw new Error(`${file} has no container`);
  return c;
}

/** A variable a DaemonSet sets (the agent and the device plugin are measured as they ship). */
export function daemonSetEnv(name: string, file = AGENT_YAML): string {
  const value = daemonSetContainer(file).env?.find((e) => e.name === name)?.value;
  if (value === undefined) throw new Error(`${file} sets no ${name}`);
  return value;
}

/** The Node flags of a DaemonSet's command (`node FLAGS... /app/bin/erdma-smcr.js`). */
export function daemonSetNodeFlags(file: string): string[] {
  return commandNodeFlags(daemonSetContainer(file));
}

/**
 * The agent and the device plugin as their DaemonSets run them, on the `node` executable given,
 * each row against `base` (bare `node` of that executable in the same run). `before` adds the
 * agent with the device plugin in one process, as before the split.
 */
/** Where and how a node daemon is started: the Node executable, the host tree it is given. */
export interface DaemonSite {
  readonly node: string;
  readonly host: string;
  /** The command line that starts `node` with its arguments (by default, that one). */
  readonly launch?: (file: string, args: string[]) => [string, string[]];
}

/**
 * A node daemon (`agent` or `device-plugin`) as its DaemonSet starts it: its manifest's Node flags
 * and NODE_OPTIONS, in a pod's environment, on the host tree; the agent with `kubeconfig` (by
 * default one that does not exist: no API server).
 */
export async function startDaemon(
  site: DaemonSite,
  command: string,
  manifest: string,
  env: Record<string, string> = {},
  kubeconfig = join(site.host, 'none'),
): Promise<ChildProcess> {
  const port = await freePort();
  const launch =
    site.launch ?? ((file: string, args: string[]): [string, string[]] => [file, args]);
  const child = keepStderr(
    spawn(
      ...launch(site.node, [
        ...daemonSetNodeFlags(manifest),
        'bin/erdma-smcr.js',
        command,
        '--host-root',
        site.host,
        '--kubelet-dir',
        join(site.host, 'kubelet'),
        ...(command === 'agent' ? ['--kubeconfig', kubeconfig] : []),
        // The DRA driver: its Node and ResourceSlice through the API server, CDI specs in the tree.
        ...(command === 'dra-plugin'
          ? ['--kubeconfig', kubeconfig, '--cdi-dir', join(site.host, 'cdi')]
          : []),
      ]),
      {
        env: podEnv({
          NODE_OPTIONS: daemonSetEnv('NODE_OPTIONS', manifest),
          ERDMA_SMCR_AGENT_METRICS_PORT: String(port),
          ERDMA_SMCR_LOG_LEVEL: 'warn',
          ...env,
        }),
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    ),
  );
  probePorts.set(child, port);
  return child;
}

/** The agent as its DaemonSet runs it: no device plugin (the other DaemonSet's), its default. */
export function startAgent(
  site: DaemonSite,
  env: Record<string, string> = {},
  kubeconfig?: string,
): Promise<ChildProcess> {
  return startDaemon(site, 'agent', AGENT_YAML, env, kubeconfig);
}

/**
 * Majors of Node.js to measure the daemons on besides the one the image ships, from
 * ERDMA_SMCR_BENCH_NODE_LINES (e.g. `22,24`; none by default): what another runtime line would
 * cost, for a before/after of the image's base (docs/benchmarks.md's history, "Every supported Node line").
 */
export function otherNodeLines(value = process.env.ERDMA_SMCR_BENCH_NODE_LINES ?? ''): string[] {
  const lines = value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  for (const l of lines)
    if (!/^\d+$/.test(l))
      throw new Error(`ERDMA_SMCR_BENCH_NODE_LINES: "${l}" is not a Node.js major (e.g. 22,24)`);
  return lines.filter((l) => l !== shippedMajor());
}

/** The executable `node` alone, idling in a pod's environment: a baseline. */
export function spawnBare(node: string): ChildProcess {
  return spawn(node, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', env: podEnv() });
}

/** The harness's real API server as the agent finds it on a node: a kubeconfig and its Node. */
export interface Api {
  readonly cp: ControlPlane;
  /** The API server's CA, as a file (the floor's watch trusts it as the agent does). */
  readonly caFile: string;
  readonly nodeName: string;
}

/** The API server ready for the agent: its CA in a file, and the Node the agent runs on. */
export async function apiFor(cp: ControlPlane, dir: string): Promise<Api> {
  const caFile = join(dir, 'api-ca.crt');
  writeFileSync(caFile, cp.caPem);
  const nodeName = 'bench-node';
  const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName } };
  const r = await cp.kubectl(['create', '-f', '-'], JSON.stringify(node));
  if (r.status !== 0) throw new Error(`kubectl create node ${nodeName}: ${r.stderr.trim()}`);
  return { cp, caFile, nodeName };
}

/** Why the rows that need the harness's API server cannot run here (undefined: they can). */
export function noKubernetesBinaries(): string | undefined {
  const missing = binariesPresent();
  return missing.length > 0
    ? `no Kubernetes binaries (${missing.join(', ')}): see the control-plane harness`
    : undefined;
}

/**
 * A busy node's host tree for the daemons: the fixture's eRDMA devices, a bridge CNI
 * configuration, the kubelet's device-plugin directory, and a veth per pod (kubelet's default
 * maxPods, 110), as a veth CNI leaves them. The daemons' discovery matches each eRDMA device to
 * its ENI by MAC, which a whole scan of /sys/class/net would read every second in the device
 * plugin (#43: idle CPU).
 */
export function busyHost(dir: string): string {
  const host = fixtureHost(join(dir, 'host'));
  mkdirSync(join(host, 'kubelet/device-plugins'), { recursive: true });
  for (let i = 0; i < BUSY_NODE_PODS; i++) {
    const veth = join(host, 'sys/class/net', `veth${(0x5eed0000 + i * 7919).toString(16)}`);
    mkdirSync(veth, { recursive: true });
    writeFileSync(
      join(veth, 'address'),
      `0a:58:0a:f4:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}\n`,
    );
  }
  return host;
}

/** A Node.js executable the bench measures on, with its bare baseline idling beside the bench. */
export interface Runtime {
  readonly node: string;
  /** Appended to its rows' names ('' for this machine's `node`). */
  readonly on: string;
  readonly bare: ChildProcess;
  base: number;
}

/**
 * The official builds to measure on besides this machine's `node`: the image's Node.js major
 * and ERDMA_SMCR_BENCH_NODE_LINES', added to `runtimes` each with its bare baseline started; a
 * skipped row for each that cannot be had.
 */
export function officialRuntimes(runtimes: Runtime[], skipped: BenchRow[]): void {
  for (const major of [undefined, ...otherNodeLines()]) {
    const official = officialNode(major);
    if ('error' in official) {
      skipped.push(
        skippedRow('memory', major ? `Node.js ${major}` : "the image's Node.js", official.error),
      );
      continue;
    }
    const on = major
      ? ` on Node ${official.version} (ERDMA_SMCR_BENCH_NODE_LINES)`
      : ` on Node ${official.version} (the image's runtime)`;
    runtimes.push({ node: official.node, on, bare: spawnBare(official.node), base: 0 });
  }
}
