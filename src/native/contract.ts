// What crosses the boundary to the native binary, in both directions: the JSON each tool
// subcommand prints (native/src/main.c), the state record the CNI plugin writes per sandbox
// (native/src/pod_record.c pod_record), and the plugin's sysctl allow-list (native/src/settings.c).
// test/integration/native/contract.test.ts holds the C side to these shapes.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import '../util/zod.js';
import * as z from 'zod/mini';

// ---- smc sockets | summary ----

export interface SmcSocket {
  readonly state: string;
  readonly mode: 'SMCR' | 'SMCD' | 'TCP' | 'UNKNOWN';
  readonly family: 'IPv4' | 'IPv6';
  readonly local: string;
  readonly peer: string;
  readonly uid: number;
  readonly inode: number;
  readonly fallback?: { readonly reason: string; readonly peerReason: string };
  readonly link?: {
    readonly dev: string;
    readonly port: number;
    readonly gid: string;
    readonly peerGid: string;
    readonly role: 'client' | 'server';
  };
  readonly conn?: {
    readonly token: number;
    readonly sndbuf: number;
    readonly rmbe: number;
    readonly txBytes: number;
    readonly rxBytes: number;
  };
}

export interface SmcSummary {
  readonly sockets: number;
  readonly listening: number;
  readonly byMode: { readonly SMCR: number; readonly SMCD: number; readonly TCP: number };
  /**
   * Established TCP connections of the netns beyond the SMC sockets' own: programs whose sockets
   * did not become SMC (a static binary under the preload mechanism, a pod without SMC-R).
   */
  readonly plainTcp: number;
  /**
   * Of byMode.TCP, the connections to or from a loopback address (no RDMA device serves lo):
   * expected, so not in `fallbacks`. Absent from a node binary older than #85.
   */
  readonly loopbackFallbacks?: number;
  /**
   * Connections the pod's SMC selection kept on TCP (#93), counted apart from byMode.TCP,
   * `fallbacks` and `plainTcp`: what a user reads to tune the ports. Absent from binaries before it.
   */
  readonly selectionKept?: number;
  readonly txBytes: number;
  readonly rxBytes: number;
  /** Local fallback reason code (0x%08x) → connections. */
  readonly fallbacks: Readonly<Record<string, number>>;
  /** Connections whose reason did not fit the binary's bounded table. */
  readonly otherFallbacks: number;
  readonly devices: readonly {
    readonly dev: string;
    readonly port: number;
    readonly connections: number;
  }[];
}

// ---- net show | configure ----

export interface NetLink {
  readonly index: number;
  readonly name: string;
  readonly mac?: string;
  readonly mtu: number;
  readonly up: boolean;
}
export interface NetAddr {
  readonly index: number;
  readonly addr: string;
  readonly prefix: number;
  readonly scope: number;
}
export interface NetRoute {
  readonly dst: string;
  readonly oif: number;
  readonly metric: number;
  readonly gateway?: string;
}
export interface NetState {
  readonly links: readonly NetLink[];
  readonly addrs: readonly NetAddr[];
  readonly routes: readonly NetRoute[];
}

/** One ENI for `net configure`. */
export interface NetConfigure {
  readonly dev: string;
  readonly address: string;
  readonly prefix: number;
  readonly cidr: string;
  readonly gateway: string;
  readonly metricSubnet: number;
  readonly metricDefault: number;
  /** 0: leave the MTU. */
  readonly mtu: number;
}

// ---- mechanisms | bpf status ----

/** How a node turns a program's TCP sockets into SMC sockets (docs/support-matrix.md). */
export type Mechanism = 'tcp2smc' | 'bpf' | 'preload' | 'none';
export const MECHANISMS: readonly Mechanism[] = ['tcp2smc', 'bpf', 'preload', 'none'];

export interface Probe {
  readonly ok: boolean;
  /** Why not, when not ok. */
  readonly why?: string;
}

/** `erdma-smcr mechanisms`: what works on this node, and the binary's choice. */
export interface MechanismProbe {
  readonly mechanism: Mechanism;
  readonly tcp2smc: Probe;
  readonly ipprotoSmc: Probe;
  readonly bpf: Probe;
  readonly afSmc: Probe;
  /**
   * The loopback-ism SMC-D device (CONFIG_SMC_LO, upstream 6.9+, Alibaba Cloud Linux 4): not a
   * mechanism but a transport, which the CLC handshake prefers between two ends on this kernel.
   * Absent from binaries older than the probe.
   */
  readonly loopbackIsm?: Probe;
  /**
   * Whether the chosen mechanism keeps a pod's SMC selection per connection (#93): the preload
   * library does; IPPROTO_SMC where the kernel has smc_hs_ctrl; tcp2smc never. Absent from binaries
   * older than the selection.
   */
  readonly selection?: Probe;
}

/** `erdma-smcr bpf status`: the pinned program and the netns switched on. */
export interface BpfStatus {
  /** The program behind the pinned link (absent when none is pinned): what an upgrade changes. */
  readonly progId?: number;
  readonly tag?: string;
  readonly loaded: boolean;
  readonly netns: readonly { readonly cookie: number; readonly switched: number }[];
  /**
   * The SMC selection's smc_hs_ctrl program (kernels 6.19+): registered or not, and per netns the
   * handshakes it kept on TCP and let offer SMC. Absent from binaries older than the selection.
   */
  readonly select?: {
    readonly registered: boolean;
    readonly netns: readonly { readonly cookie: number; readonly kept: number; readonly selected: number }[];
  };
}

// ---- sysctls ----

/** The knobs the plugin writes under net.smc, with the range it accepts for each. */
export interface SysctlTable {
  readonly knobs: readonly { readonly sysctl: string; readonly min: number; readonly max: number }[];
}

// ---- the plugin's state record ----

/**
 * The record exactly as the plugin writes it (native/src/pod_record.c pod_record): every field, and no other. The reader
 * below is lenient (a record from an older or newer plugin is read for what it has); the contract
 * test parses the plugin's real output with this strict schema.
 */
export const pluginRecordSchema = z.strictObject({
    podNamespace: z.string(),
    podName: z.string(),
    podUid: z.string(),
    containerId: z.string(),
    ifname: z.string(),
    netns: z.string(),
    outcome: z.enum(['pending', 'applied', 'partial']),
    sysctls: z.record(z.string(), z.string()),
    missing: z.array(z.string()),
    pnet: z.strictObject({ id: z.string(), eth: z.string(), added: z.boolean() }),
    warnings: z.array(z.string()),
    ipv6Only: z.boolean(),
    mechanism: z.enum(['tcp2smc', 'bpf', 'preload', 'none']),
    bpf: z.optional(z.strictObject({ dir: z.string(), cookie: z.string().check(z.regex(/^\d+$/)) })),
    mechanismWhy: z.optional(z.string()),
    selection: z.optional(z.enum(['enforced', 'none'])),
    selectionWhy: z.optional(z.string()),
    select: z.optional(z.string()),
  });

/** What the CNI plugin wrote for one sandbox (native/src/pod_record.c pod_record). */
export interface PluginRecord {
  readonly podUid: string;
  readonly podNamespace: string;
  readonly podName: string;
  /** The sandbox's netns as the runtime named it (a host path, or /proc/PID/ns/net for a late apply). */
  readonly netns: string;
  readonly containerId: string;
  readonly outcome: 'applied' | 'partial' | string;
  readonly missing: readonly string[];
  readonly pnet?: { readonly id?: string; readonly added?: boolean };
  /** The pod had only IPv6 addresses: the plugin kept IPv6 on (SMC-R cannot serve it). */
  readonly ipv6Only?: boolean;
  /** How the pod's TCP becomes SMC (absent in records of plugins before the mechanisms). */
  readonly mechanism?: string;
  /** Mechanism `none`: why none was active at ADD. */
  readonly mechanismWhy?: string;
  /**
   * Whether the pod's SMC selection (which connections use SMC, #93) is kept on its node: `none`
   * where every TCP connection of the pod becomes SMC (tcp2smc; IPPROTO_SMC without smc_hs_ctrl).
   */
  readonly selection?: string;
  readonly selectionWhy?: string;
  /** The selection's text as the webhook wrote it (settings "select"): what `smc summary --select` counts by. */
  readonly select?: string;
  readonly mtimeMs: number;
}

/** A record from the plugin's JSON (undefined when it names no pod). */
function recordOf(doc: Partial<Record<keyof PluginRecord, unknown>>, mtimeMs: number): PluginRecord | undefined {
  if (typeof doc.podUid !== 'string' || doc.podUid === '') return undefined;
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  const pnet = typeof doc.pnet === 'object' && doc.pnet !== null ? (doc.pnet as { id?: unknown; added?: unknown }) : undefined;
  return {
    podUid: doc.podUid,
    podNamespace: str(doc.podNamespace),
    podName: str(doc.podName),
    netns: str(doc.netns),
    containerId: str(doc.containerId),
    outcome: str(doc.outcome),
    missing: Array.isArray(doc.missing) ? doc.missing.map(String) : [],
    ...(pnet ? { pnet: { id: str(pnet.id), added: pnet.added === true } } : {}),
    ...(doc.ipv6Only === true ? { ipv6Only: true } : {}),
    ...(typeof doc.mechanism === 'string' ? { mechanism: doc.mechanism } : {}),
    ...(typeof doc.mechanismWhy === 'string' ? { mechanismWhy: doc.mechanismWhy } : {}),
    ...(typeof doc.selection === 'string' ? { selection: doc.selection } : {}),
    ...(typeof doc.selectionWhy === 'string' ? { selectionWhy: doc.selectionWhy } : {}),
    ...(typeof doc.select === 'string' ? { select: doc.select } : {}),
    mtimeMs,
  };
}

/** The newest record per pod UID in the plugin's state dir. */
export function readRecords(stateDir: string): Map<string, PluginRecord> {
  const out = new Map<string, PluginRecord>();
  if (!existsSync(stateDir)) return out;
  for (const f of readdirSync(stateDir)) {
    if (!f.endsWith('.json')) continue;
    try {
      const path = join(stateDir, f);
      const rec = recordOf(JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>, statSync(path).mtimeMs);
      if (!rec) continue;
      const prev = out.get(rec.podUid);
      if (!prev || prev.mtimeMs < rec.mtimeMs) out.set(rec.podUid, rec);
    } catch {
      // a record being written or removed: the next pass reads it
    }
  }
  return out;
}

/** The SMC-R pods the plugin has records of, as the agent samples them and `status` lists them. */
export interface RecordedPod {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly netns: string;
  /** How the plugin made the pod's TCP SMC (absent in records of older plugins). */
  readonly mechanism?: string;
  /** The pod's SMC selection (the record's `select`): connections it keeps on TCP are counted apart. */
  readonly select?: string;
  /** `none` where the node's mechanism cannot keep to that selection (the record's), and why. */
  readonly selection?: string;
  readonly selectionWhy?: string;
}

export function recordedPods(stateDir: string): RecordedPod[] {
  return [...readRecords(stateDir).values()]
    .filter((r) => r.netns !== '' && r.podName !== '')
    .map((r) => ({
      namespace: r.podNamespace,
      name: r.podName,
      uid: r.podUid,
      netns: r.netns,
      ...(r.mechanism ? { mechanism: r.mechanism } : {}),
      ...(r.select ? { select: r.select } : {}),
      ...(r.selection ? { selection: r.selection } : {}),
      ...(r.selectionWhy ? { selectionWhy: r.selectionWhy } : {}),
    }));
}
