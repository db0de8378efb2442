// Whether this node can run SMC-R pods, as node labels: the same kernel comparison the policy uses,
// the smc module, the driver mode and at least one healthy eRDMA device.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_LABELS } from '../../constants.js';
import { kernelEligibility } from '../../policy/kernel.js';
import type { Mechanism, MechanismProbe } from '../../native/contract.js';
import type { RdmaDevice } from '../../devices/discovery.js';
import { portRange, readReservedPorts, type ReservedPorts } from './reserved-ports.js';
import {
  kernelModulesDir,
  kernelReleaseFile,
  osReleaseFile,
  smcSysctl,
  sysModule,
} from '../host.js';

export interface HostFacts {
  /** `uname -r`, from /proc/sys/kernel/osrelease. */
  readonly kernelRelease: string;
  /** PRETTY_NAME from the host's /etc/os-release ('' when unknown). */
  readonly osImage: string;
  /** /proc/sys/net/smc/tcp2smc exists (Alibaba's smc module is loaded). */
  readonly smcModule: boolean;
  /**
   * Whether the running kernel has SMC at all, from its module lists under the host's
   * /lib/modules/<release>: `absent` when they list no smc (a kernel built without CONFIG_SMC,
   * such as Debian's 7.2), `unknown` when they cannot be read (a node may have no /lib/modules at
   * all: the agent mounts it without a type check, #77). Absent from older facts.
   */
  readonly smcBuilt?: 'module' | 'builtin' | 'absent' | 'unknown';
  /**
   * What `erdma-smcr mechanisms` found (and, for bpf, that the agent pinned the program); without
   * it only the tcp2smc path is considered, as before the probe existed.
   */
  readonly mechanisms?: MechanismProbe;
  /** TCP ports the node's erdma and smc modules reserve in every netns (./reserved-ports.ts). */
  readonly reservedPorts?: ReservedPorts;
}

export interface Capability {
  readonly capable: boolean;
  /** How the node turns a pod's TCP into SMC ('none' when not capable). */
  readonly mechanism: Mechanism;
  /** Driver mode of the node's eRDMA devices ('' when there are none). */
  readonly driverMode: string;
  /** Label-safe reason when not capable ('' when capable). */
  readonly reason: string;
  /** The same in words, for logs and events. */
  readonly detail: string;
  /**
   * The kernel has loopback-ism (SMC-D between pods of the node), by the probe; undefined when the
   * probe did not say (an older binary, or no probe yet).
   */
  readonly smcdLoopback?: boolean;
  /** What the host facts said the node reserves (labels for the webhook's port warning). */
  readonly reservedPorts?: ReservedPorts;
  /**
   * Whether the node's mechanism keeps a pod's SMC selection per connection (#93), by the probe;
   * undefined when the probe did not say (an older binary, or no probe yet).
   */
  readonly selection?: boolean;
}

function read(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Reads the facts from a proc root (the agent's own /proc: it shares the host kernel and, with hostNetwork, its netns) and a host root. */
export function hostFacts(procRoot: string, hostRoot: string): HostFacts {
  const osRelease = read(osReleaseFile(hostRoot));
  const pretty = /^PRETTY_NAME=("?)(.*)\1$/m.exec(osRelease)?.[2] ?? '';
  const kernelRelease = read(kernelReleaseFile(procRoot)).trim();
  return {
    kernelRelease,
    osImage: pretty,
    smcModule: existsSync(smcSysctl(procRoot, 'tcp2smc')),
    smcBuilt: smcBuilt(hostRoot, kernelRelease),
    reservedPorts: readReservedPorts(hostRoot),
  };
}

/**
 * Whether the kernel `release` has SMC, as depmod lists its modules (modules.dep) and what is built
 * in (modules.builtin) under the host's /lib/modules/<release>; or a loaded smc (/sys/module/smc,
 * e.g. where the lists are not installed).
 */
export function smcBuilt(hostRoot: string, release: string): NonNullable<HostFacts['smcBuilt']> {
  if (existsSync(sysModule(hostRoot, 'smc'))) return 'module';
  if (release === '') return 'unknown';
  const dir = kernelModulesDir(hostRoot, release);
  const dep = read(join(dir, 'modules.dep'));
  const builtin = read(join(dir, 'modules.builtin'));
  if (dep === '' && builtin === '') return 'unknown';
  if (/(^|\/)net\/smc\/smc\.ko(\.[a-z]+)?:/m.test(dep)) return 'module';
  if (/(^|\/)net\/smc\/smc\.ko$/m.test(builtin)) return 'builtin';
  return 'absent';
}

/** What the probe and the host say beside capability: loopback-ism, the selection, reserved ports. */
function probedFacts(
  host: HostFacts,
): Pick<Capability, 'smcdLoopback' | 'selection' | 'reservedPorts'> {
  // Said only where SMC sockets open: a node without SMC has no transport to speak of.
  const m = host.mechanisms;
  const lo = m && (m.afSmc.ok || m.ipprotoSmc.ok) ? m.loopbackIsm : undefined;
  return {
    ...(lo ? { smcdLoopback: lo.ok } : {}),
    ...(m?.selection ? { selection: m.selection.ok } : {}),
    ...(host.reservedPorts ? { reservedPorts: host.reservedPorts } : {}),
  };
}

/**
 * Decides capability; reasons are stable, short and valid label values. `eniProblem`: why the
 * agent could not configure an eRDMA ENI (agent.manageEni), undefined when it could or does not
 * manage them.
 */
export function capability(
  host: HostFacts,
  devices: readonly RdmaDevice[],
  eniProblem?: string,
  /**
   * agent.tcp2smcNodes: `preload` (the default) gives pods the preload library where tcp2smc is the
   * kernel's way and AF_SMC works too, so that their SMC selection is enforced (#100); `tcp2smc`
   * keeps the knob, which converts every TCP socket of the pod's netns.
   */
  tcp2smcNodes: 'preload' | 'tcp2smc' = 'preload',
): Capability {
  const probed = probedFacts(host);
  const modes = [...new Set(devices.map((d) => d.driverMode))];
  const driverMode = modes.includes('default') ? 'default' : (modes[0] ?? '');
  const no = (reason: string, detail: string): Capability => ({
    capable: false,
    mechanism: 'none',
    driverMode,
    reason,
    detail,
    ...probed,
  });
  const first = chooseMechanism(host);
  const chosen = preferPreload(first, host, tcp2smcNodes);
  // The library enforces the selection the knob could not.
  const smcd = chosen !== first ? { ...probed, selection: true } : probed;
  if (typeof chosen !== 'string') return no(chosen.reason, chosen.detail);
  if (devices.length === 0)
    return no(
      'no-erdma-device',
      'no eRDMA device found: attach an eRDMA-enabled ENI and install the erdma driver',
    );
  if (driverMode !== 'default')
    return no(
      `driver-mode-${driverMode}`,
      `eRDMA driver mode is "${driverMode}", SMC-R needs "default"`,
    );
  if (eniProblem)
    return no('eni-not-configured', `an eRDMA ENI could not be configured: ${eniProblem}`);
  if (!devices.some((d) => d.healthy && d.smcrCapable))
    return no('no-healthy-device', 'no eRDMA device in default mode has an ACTIVE port');
  return {
    capable: true,
    mechanism: chosen,
    driverMode,
    reason: '',
    detail: `SMC-R capable (${chosen}${chosen !== first ? ` in place of ${first as string}, which cannot keep a pod's SMC selection; statically linked programs stay on TCP` : ''})${smcd.smcdLoopback ? ', and SMC-D within the node (loopback-ism)' : ''}`,
    ...smcd,
  };
}

/**
 * The mechanism a node uses, best first: Alibaba's tcp2smc knob on the kernels the seeds' rule
 * admits (Alibaba Cloud Linux 3 from 5.10.134-17), the IPPROTO_SMC program, then the preload
 * library where only AF_SMC exists. Or why none works, as a label-safe reason and in words.
 */
function chooseMechanism(host: HostFacts): Mechanism | { reason: string; detail: string } {
  const k = kernelEligibility(host.kernelRelease, host.osImage || undefined);
  const m = host.mechanisms;
  // The knob is read live on every pass (the probe's answer is kept): smc can be unloaded.
  if (k.ok && host.smcModule) return 'tcp2smc';
  if (m?.ipprotoSmc.ok && m.bpf.ok) return 'bpf';
  if (m?.afSmc.ok) return 'preload';
  return whyNone(host, k);
}

/** tcp2smc cannot keep a selection; the preload library can wherever AF_SMC works (#100). */
function preferPreload(
  first: ReturnType<typeof chooseMechanism>,
  host: HostFacts,
  tcp2smcNodes: 'preload' | 'tcp2smc',
): ReturnType<typeof chooseMechanism> {
  return first === 'tcp2smc' && tcp2smcNodes === 'preload' && host.mechanisms?.afSmc.ok
    ? 'preload'
    : first;
}

type Eligibility = ReturnType<typeof kernelEligibility>;

/** Why no mechanism works on a node, as a label-safe reason and in words. */
function whyNone(host: HostFacts, k: Eligibility): { reason: string; detail: string } {
  const m = host.mechanisms;
  if (host.smcBuilt === 'absent')
    return {
      reason: 'kernel-without-smc',
      detail: `kernel ${host.kernelRelease} has no smc module (built without CONFIG_SMC, as Debian's 7.2 kernels are): no way to run SMC-R on it; run the node on a kernel that ships SMC (docs/support-matrix.md)`,
    };
  if (k.ok)
    return {
      reason: 'no-smc-module',
      detail:
        'the smc kernel module is not loaded (/proc/sys/net/smc/tcp2smc is missing): modprobe smc',
    };
  // A kernel the seeds' rule does not know to ship smc, no module lists (a node without
  // /lib/modules, #77) and no SMC socket: the socket probe went through the kernel's own module
  // autoload, so SMC cannot be had now, but whether the kernel ships it cannot be told. Say that,
  // not kernel-without-smc.
  if (host.smcBuilt === 'unknown' && m && !m.afSmc.ok && !/older than/.test(k.reason))
    return {
      reason: 'smc-unknown',
      detail: `no SMC socket could be opened (${m.afSmc.why ?? 'AF_SMC refused'}), and whether kernel ${host.kernelRelease || '(unknown release)'} ships smc is unknown: this node has no module lists (/lib/modules/${host.kernelRelease || '<release>'}/modules.dep, modules.builtin). If the kernel has smc, load it (modprobe smc); if not, run the node on a kernel that ships SMC (docs/support-matrix.md)`,
    };
  if (/older than/.test(k.reason)) return { reason: 'kernel-too-old', detail: k.reason };
  if (!m) return { reason: 'unsupported-os-or-kernel', detail: k.reason };
  const why = [m.ipprotoSmc, m.bpf, m.afSmc].map((p) => p.why).filter(Boolean);
  return {
    reason: 'unsupported-os-or-kernel',
    detail: `${k.reason}, and no other way to make TCP sockets SMC works: ${why.join('; ')}`,
  };
}

/** Our labels for a capability: reason present only when not capable (null removes it). */
export function capabilityLabels(c: Capability): Record<string, string | null> {
  return {
    [NODE_LABELS.capable]: String(c.capable),
    [NODE_LABELS.driverMode]: c.driverMode === '' ? null : c.driverMode,
    [NODE_LABELS.reason]: c.capable ? null : c.reason,
    [NODE_LABELS.mechanism]: c.capable ? c.mechanism : null,
    [NODE_LABELS.smcdLoopback]: c.smcdLoopback === undefined ? null : String(c.smcdLoopback),
    [NODE_LABELS.selection]:
      !c.capable || c.selection === undefined ? null : c.selection ? 'enforced' : 'none',
    [NODE_LABELS.erdmaReservedPorts]: c.reservedPorts?.erdma
      ? portRange(c.reservedPorts.erdma)
      : null,
    [NODE_LABELS.smcReservedPorts]: c.reservedPorts?.smc ? portRange(c.reservedPorts.smc) : null,
  };
}

/** Kubernetes label-value rules: at most 63 characters, alphanumeric at both ends, [-_.A-Za-z0-9] inside. */
export function isLabelValue(v: string): boolean {
  return v === '' || (v.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(v));
}
