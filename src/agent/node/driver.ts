// The eRDMA driver mode the admin asked for (agent.preferDriver), and the kernel modules each mode
// needs, kept by the agent when agent.manageDriver is on (off by default: on ACK the platform's
// eRDMA controller does this). Facts come from sysfs and /proc under the agent's roots; the only
// action is the host's modprobe, so tests put a fake one at that boundary.
//
// What the modes are on a node (Alibaba's erdma driver, as its source declares it):
// - `default` and `compat` are one driver build: module parameter `compat_mode` (bool, read-only
//   after load: /sys/module/erdma/parameters/compat_mode is Y or N). Switching means unloading and
//   loading the module with the other value, which only works while nothing holds a device.
// - `ofed` is a different build of the driver, against NVIDIA's OFED stack (whose modules, such as
//   mlx_compat, are then loaded). No module parameter switches to or from it: the eRDMA installer
//   does. The agent reports that and leaves the driver alone.
// SMC-R (default mode) needs the `smc` module; GPU nodes in ofed mode need `nvidia_peermem` for
// GPUDirect RDMA.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import type { DriverMode } from '../../policy/types.js';
import { read } from '../../devices/discovery.js';
import { pciDevices, procOf, smcSysctl, sysModule } from '../host.js';

const run = promisify(execFile);

export type PreferDriver = 'auto' | DriverMode;

export interface DriverFacts {
  /** The erdma module is loaded (/sys/module/erdma). */
  readonly erdmaLoaded: boolean;
  /** Its mode when loaded. */
  readonly mode?: DriverMode;
  /** NVIDIA GPUs on the PCI bus (vendor 0x10de, display class 0x03xxxx). */
  readonly gpus: number;
  readonly smcLoaded: boolean;
  readonly peermemLoaded: boolean;
}

export interface DriverAction {
  /** modprobe arguments, e.g. ['-r', 'erdma'] or ['erdma', 'compat_mode=N']. */
  readonly args: readonly string[];
  /** The module it is about: a failure skips the rest of its module's actions, not the others'. */
  readonly module: 'erdma' | 'smc' | 'nvidia_peermem';
  readonly why: string;
}

export interface DriverDecision {
  readonly wanted: DriverMode;
  /** ok: nothing to do; change: actions to run; deferred: a reload is needed but devices are in use; manual: the agent cannot reach the mode. */
  readonly status: 'ok' | 'change' | 'deferred' | 'manual';
  readonly actions: readonly DriverAction[];
  /** For deferred and manual: what stands in the way, in words. */
  readonly detail: string;
}

function countGpus(hostRoot: string): number {
  const dir = pciDevices(hostRoot);
  if (!existsSync(dir)) return 0;
  return readdirSync(dir).filter(
    (d) =>
      read(join(dir, d, 'vendor')).toLowerCase() === '0x10de' &&
      read(join(dir, d, 'class'))
        .toLowerCase()
        .startsWith('0x03'),
  ).length;
}

/** What the node has now, from sysfs under hostRoot and the agent's /proc. */
export function driverFacts(hostRoot: string, procRoot: string): DriverFacts {
  const mod = (name: string): boolean => existsSync(sysModule(hostRoot, name));
  const erdmaLoaded = mod('erdma');
  let mode: DriverMode | undefined;
  if (erdmaLoaded) {
    if (mod('mlx_compat')) mode = 'ofed';
    else
      mode = /^(y|1)$/i.test(read(sysModule(hostRoot, 'erdma', 'parameters', 'compat_mode')))
        ? 'compat'
        : 'default';
  }
  return {
    erdmaLoaded,
    ...(mode ? { mode } : {}),
    gpus: countGpus(hostRoot),
    smcLoaded: mod('smc') || existsSync(smcSysctl(procRoot)),
    peermemLoaded: mod('nvidia_peermem'),
  };
}

/**
 * Processes holding an RDMA verbs device open (/proc/PID/fd → /dev/infiniband/uverbsN): reloading
 * the driver under them would break their queue pairs. Read only when a reload is wanted.
 */
export function deviceHolders(procRoot: string, limit = 5): string[] {
  const out: string[] = [];
  let pids: string[];
  try {
    pids = readdirSync(procRoot).filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(procOf(procRoot, pid, 'fd'));
    } catch {
      continue; // gone, or not ours to read
    }
    const dev = fds
      .map((fd) => {
        try {
          return readlinkSync(procOf(procRoot, pid, 'fd', fd));
        } catch {
          return '';
        }
      })
      .find((t) => t.startsWith('/dev/infiniband/uverbs'));
    if (dev) {
      out.push(`pid ${pid} (${read(procOf(procRoot, pid, 'comm')) || '?'}) holds ${dev}`);
      if (out.length >= limit) break;
    }
  }
  return out;
}

/** The mode to run: `auto` is ofed on a node with NVIDIA GPUs (NCCL over eRDMA), else default (SMC-R). */
export function wantedMode(prefer: PreferDriver, facts: Pick<DriverFacts, 'gpus'>): DriverMode {
  if (prefer !== 'auto') return prefer;
  return facts.gpus > 0 ? 'ofed' : 'default';
}

/** The decision, as a pure function of the facts (`holders` is called only when a reload is wanted). */
export function decideDriver(
  prefer: PreferDriver,
  facts: DriverFacts,
  holders: () => string[],
): DriverDecision {
  const wanted = wantedMode(prefer, facts);
  const actions: DriverAction[] = [];
  const param = (m: DriverMode): string => `compat_mode=${m === 'compat' ? 'Y' : 'N'}`;
  if (!facts.erdmaLoaded) {
    actions.push({
      args: wanted === 'ofed' ? ['erdma'] : ['erdma', param(wanted)],
      module: 'erdma',
      why: `the erdma driver is not loaded; loading it in ${wanted} mode`,
    });
  } else if (facts.mode !== wanted) {
    if (wanted === 'ofed' || facts.mode === 'ofed') {
      return {
        wanted,
        status: 'manual',
        actions: [],
        detail: `the erdma driver runs in ${facts.mode} mode, ${wanted} was asked for: switching to or from ofed means installing the other build of the driver (the eRDMA installer), not a module parameter`,
      };
    }
    const held = holders();
    if (held.length > 0) {
      return {
        wanted,
        status: 'deferred',
        actions: [],
        detail: `the erdma driver runs in ${facts.mode} mode, ${wanted} was asked for, but its devices are in use (${held.join('; ')}): not reloaded; retried on the next pass`,
      };
    }
    actions.push({
      args: ['-r', 'erdma'],
      module: 'erdma',
      why: `the erdma driver runs in ${facts.mode} mode, ${wanted} was asked for: unloading it`,
    });
    actions.push({
      args: ['erdma', param(wanted)],
      module: 'erdma',
      why: `loading the erdma driver in ${wanted} mode`,
    });
  }
  if (wanted === 'default' && !facts.smcLoaded)
    actions.push({ args: ['smc'], module: 'smc', why: 'SMC-R needs the smc module' });
  if (wanted === 'ofed' && facts.gpus > 0 && !facts.peermemLoaded)
    actions.push({
      args: ['nvidia_peermem'],
      module: 'nvidia_peermem',
      why: 'GPUDirect RDMA over eRDMA needs nvidia_peermem',
    });
  return { wanted, status: actions.length > 0 ? 'change' : 'ok', actions, detail: '' };
}

export interface DriverPassOptions {
  readonly prefer: PreferDriver;
  readonly hostRoot: string;
  readonly procRoot: string;
  /** The host's modprobe as a command line (e.g. ['chroot', '/host', 'modprobe']). */
  readonly modprobe: readonly string[];
  readonly logger: Logger;
}

export interface DriverPassResult {
  readonly decision: DriverDecision;
  /** Each action run, with its outcome. */
  readonly done: readonly { readonly action: DriverAction; readonly error?: string }[];
  /** The facts after the pass. */
  readonly facts: DriverFacts;
}

/** The modprobe command line for a host root: the host's own modprobe and modules. */
export function defaultModprobe(hostRoot: string): string[] {
  return hostRoot === '/' ? ['modprobe'] : ['chroot', hostRoot, 'modprobe'];
}

/**
 * One pass: decide, run the actions in order (a failure skips the rest of that module's actions;
 * an erdma load that fails after its unload loads it back as it was), read the facts again.
 */
export async function reconcileDriver(o: DriverPassOptions): Promise<DriverPassResult> {
  const before = driverFacts(o.hostRoot, o.procRoot);
  const decision = decideDriver(o.prefer, before, () => deviceHolders(o.procRoot));
  const done: { action: DriverAction; error?: string }[] = [];
  const [cmd, ...pre] = o.modprobe;
  const modprobe = async (action: DriverAction): Promise<string | undefined> => {
    try {
      await run(cmd ?? 'modprobe', [...pre, ...action.args], { timeout: 60_000 });
      o.logger.info({ modprobe: action.args.join(' ') }, action.why);
      done.push({ action });
      return undefined;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      const error = (e.stderr ?? '').trim() || e.message;
      o.logger.warn({ modprobe: action.args.join(' '), error }, `${action.why}: failed`);
      done.push({ action, error });
      return error;
    }
  };
  const failed = new Set<DriverAction['module']>();
  for (const action of decision.actions) {
    if (failed.has(action.module)) continue;
    if ((await modprobe(action)) === undefined) continue;
    failed.add(action.module);
    // Unloaded but not loaded again in the new mode: load it back as it was, so the node keeps its devices.
    const unloaded = done.some((d) => d.action.args[0] === '-r' && !d.error);
    if (action.args[0] === 'erdma' && unloaded && before.mode && before.mode !== 'ofed') {
      await modprobe({
        args: ['erdma', `compat_mode=${before.mode === 'compat' ? 'Y' : 'N'}`],
        module: 'erdma',
        why: `loading the erdma driver back in ${before.mode} mode`,
      });
    }
  }
  if (decision.status === 'deferred' || decision.status === 'manual')
    o.logger.warn({ wanted: decision.wanted, mode: before.mode }, decision.detail);
  return { decision, done, facts: driverFacts(o.hostRoot, o.procRoot) };
}
