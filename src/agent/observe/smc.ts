// What a pod's connections really run on: the native binary's `smc sockets|summary|stats`
// (smc_diag and the SMC generic netlink family, read inside the pod's network namespace), the
// fallback reason codes decoded, and the per-pod view the agent samples and `status` prints.
import { describePlainTcp, plainTcpPrograms, type PlainTcpProgram } from './programs.js';
import { existsSync } from 'node:fs';
import type { NativeBinary } from '../../native/binary.js';
import type { SmcSocket, SmcSummary } from '../../native/contract.js';
import { inHost } from '../host.js';

export type { SmcSocket, SmcSummary } from '../../native/contract.js';

export interface Reason {
  readonly code: string;
  /** The kernel's name without SMC_CLC_DECL_, e.g. NOSMCDEV. */
  readonly name: string;
  /** What it means and, where we know it, what to do. */
  readonly meaning: string;
}

/**
 * The SMC decline / fallback reason codes (SMC_CLC_DECL_* of net/smc/smc_clc.h, the values
 * smc-tools decodes too), with what each means for a pod of ours.
 */
const REASONS: Readonly<Record<number, readonly [string, string]>> = {
  0x01010000: ['MEM', 'not enough memory for SMC buffers on this host'],
  0x02010000: [
    'TIMEOUT_CL',
    'timed out waiting for the RDMA link confirmation: check the eRDMA device and its port',
  ],
  0x02020000: ['TIMEOUT_AL', 'timed out adding an RDMA link'],
  0x03000000: ['CNFERR', 'SMC configuration error'],
  0x03010000: [
    'PEERNOSMC',
    'the peer does not speak SMC: it is not an SMC-R pod (or its node has no smc module)',
  ],
  0x03020000: ['IPSEC', 'the connection uses IPsec, which SMC cannot carry'],
  0x03030000: [
    'NOSMCDEV',
    "no SMC device matches the interface: the pod has no pnet entry for its interface, or the node's eRDMA device is not in the pnet table (check the agent's /readyz)",
  ],
  0x03030001: ['NOSMCDDEV', 'no SMC-D device found'],
  0x03030002: [
    'NOSMCRDEV',
    "no SMC-R (RDMA) device matches the interface's PNETID: check the node's pnet table",
  ],
  0x03030003: ['NOISM2SUPP', 'the hardware has no ISMv2 support'],
  0x03030004: ['NOV2EXT', 'the peer sent no SMCv2 extension'],
  0x03030005: ['NOV2DEXT', 'the peer sent no SMC-Dv2 extension'],
  0x03030006: ['NOSEID', 'the peer sent no system EID'],
  0x03030007: ['NOSMCD2DEV', 'no SMC-Dv2 device found'],
  0x03030008: ['NOUEID', 'no user EID in common with the peer: both ends need the same UEID'],
  0x03030009: ['RELEASEERR', 'SMC release versions could not be negotiated'],
  0x0303000a: ['MAXCONNERR', 'the maximum connections per link group could not be negotiated'],
  0x0303000b: ['MAXLINKERR', 'the maximum links per link group could not be negotiated'],
  // Alibaba's kernels (Anolis): the SMCv2.1 supplemental features, which carry their
  // vendor_exp_options (experiment_vendor_options in upstream terms), do not match between the
  // two ends; one Anolis tree names this code REQLGR for a link group it must create. Set the
  // same vendor options on both nodes, or none.
  0x0303000c: [
    'FEATUNSUPP',
    "the peers' supplemental (vendor) features do not match: Alibaba's kernels decline when their vendor_exp_options differ",
  ],
  0x03040000: ['MODEUNSUPP', 'the SMC modes of the two ends do not match'],
  0x03050000: ['RMBE_EC', 'the peer has an eye catcher in its RMBE'],
  0x03060000: ['OPTUNSUPP', 'a socket option SMC does not support (e.g. TCP fast open) is set'],
  0x03070000: ['DIFFPREFIX', 'the peers are not in the same IP subnet (SMC-Rv1 needs one subnet)'],
  0x03080000: ['GETVLANERR', 'cannot get the VLAN of the interface'],
  0x03090000: ['ISMVLANERR', 'cannot register the VLAN on the ISM device'],
  0x030a0000: ['NOACTLINK', 'no active SMC-R link in the link group'],
  0x030b0000: ['NOSRVLINK', "the server's SMC-R link was not found"],
  0x030c0000: ['VERSMISMAT', 'the SMC versions do not match'],
  0x030d0000: ['MAX_DMB', 'the SMC-D DMB limit is exceeded'],
  0x030e0000: ['NOROUTE', 'SMC-Rv2: no route to the peer'],
  0x030f0000: ['NOINDIRECT', 'SMC-Rv2: indirect connection mismatch'],
  0x04000000: ['SYNCERR', 'synchronization error in the handshake'],
  0x05000000: [
    'PEERDECL',
    'the peer declined SMC during the handshake (its own reason is the peer reason)',
  ],
  0x09990000: ['INTERR', "internal error in the kernel's SMC"],
  0x09990001: ['ERR_RTOK', 'remote token handling failed'],
  0x09990002: ['ERR_RDYLNK', 'the RDMA link could not be made ready'],
  0x09990003: ['ERR_REGBUF', 'registering the RDMA buffers failed'],
  // Alibaba's kernels (Anolis smc_clc.h, SMC_CLC_DECL_CREDITSERR): credit-based flow control.
  0x09990004: [
    'CREDITSERR',
    "announcing receive credits on the SMC-R link failed (Alibaba's kernels' credit-based flow control)",
  ],
};

/** Fallen-back connections that are not loopback ones (those are expected: no RDMA device serves lo). */
export const unexpectedFallbacks = (s: SmcSummary): number =>
  s.byMode.TCP - (s.loopbackFallbacks ?? 0);

/** A fallback reason decoded; unknown codes keep their number. */
export function describeReason(code: string): Reason {
  const n = Number.parseInt(code, 16);
  const known = Number.isNaN(n) ? undefined : REASONS[n];
  return known
    ? { code, name: known[0], meaning: known[1] }
    : { code, name: 'UNKNOWN', meaning: `reason ${code} is not one erdma-smcr knows` };
}

/** The label value for a reason (bounded: the names above, or UNKNOWN). */
export function reasonLabel(code: string): string {
  return describeReason(code).name;
}

/** A netns path as the agent reaches it: /proc/... as is (hostPID), anything else below the host root. */
export function agentNetnsPath(hostRoot: string, netns: string): string {
  return netns.startsWith('/proc/') || hostRoot === '/' ? netns : inHost(hostRoot, netns);
}

/**
 * The first of the ways to reach a pod's netns that exists: the runtime's path below the host root
 * (/var/run is /run on the node, so both are tried), else a process of the pod (hostPID).
 */
export function reachNetns(
  hostRoot: string,
  netns: string,
  byPod?: () => string | undefined,
): string {
  const direct = agentNetnsPath(hostRoot, netns);
  const candidates = [
    direct,
    ...(netns.startsWith('/var/run/')
      ? [agentNetnsPath(hostRoot, netns.slice('/var'.length))]
      : []),
  ];
  const found = candidates.find((p) => existsSync(p));
  return found ?? byPod?.() ?? direct;
}

export interface PodSmc {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** How the plugin made the pod's TCP SMC, as it recorded it. */
  readonly mechanism?: string;
  readonly summary?: SmcSummary;
  /** Only when asked for (status --pod). */
  readonly sockets?: readonly SmcSocket[];
  /** Why the pod could not be read (its netns is gone, the kernel has no smc_diag, ...). */
  readonly error?: string;
  /** Under preload, with plain TCP connections: the programs holding them, and why (./programs.ts). */
  readonly plainTcpPrograms?: readonly PlainTcpProgram[];
}

const pad = (s: string, n: number): string => (s.length >= n ? `${s} ` : s.padEnd(n + 1));

function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

function podLine(p: PodSmc): string {
  const who = `${p.namespace}/${p.name}`;
  const s = p.summary;
  if (!s) return `${pad(who, 40)}not read: ${p.error ?? 'unknown'}`;
  // SMC-D has no RDMA device: on a node it is loopback-ism, shared memory within the kernel.
  const devs =
    s.devices.map((d) => `${d.dev}:${d.port}`).join(',') ||
    (s.byMode.SMCD > 0 ? 'loopback-ism' : '-');
  const reasons = Object.entries(s.fallbacks)
    .map(([code, n]) => `${describeReason(code).name}×${n}`)
    .concat(s.otherFallbacks ? [`other×${s.otherFallbacks}`] : [])
    .join(', ');
  return `${pad(who, 40)}${pad(String(s.byMode.SMCR), 6)}${pad(String(s.byMode.SMCD), 6)}${pad(String(s.byMode.TCP), 6)}${pad(fmtBytes(s.txBytes), 10)}${pad(fmtBytes(s.rxBytes), 10)}${pad(devs, 14)}${reasons || '-'}`;
}

/** Why connections of a pod stayed plain TCP, by the pod's mechanism. */
export function plainTcpWhy(mechanism: string | undefined): string {
  switch (mechanism) {
    case 'preload':
      return 'programs that do not load the preload library stay on TCP: statically linked ones (Go, busybox), or a program that clears LD_PRELOAD';
    case 'bpf':
      return 'sockets opened before the plugin switched the pod on, or with a protocol other than TCP, stay on TCP';
    case 'tcp2smc':
      return 'sockets opened before net.smc.tcp2smc was set stay on TCP';
    default:
      return "no mechanism switched this pod to SMC (see the pod's Events and `erdma-smcr mechanisms` on the node)";
  }
}

/** Pods with plain TCP connections, and why those are not SMC. */
function plainTcpNotes(pods: readonly PodSmc[]): string[] {
  const notes = pods
    .filter((p) => (p.summary?.plainTcp ?? 0) > 0)
    .flatMap((p) => [
      `  ${p.namespace}/${p.name}: ${p.summary!.plainTcp} TCP connection(s) not on SMC (${p.mechanism ?? 'unknown'}): ${plainTcpWhy(p.mechanism)}`,
      ...(p.plainTcpPrograms ?? []).map((x) => `    ${describePlainTcp(x)}`),
    ]);
  return notes.length > 0 ? ['', 'Plain TCP:', ...notes] : [];
}

/** Pods whose SMC selection kept connections on TCP (#93): said apart, to tune the ports by. */
function selectionNotes(pods: readonly PodSmc[]): string[] {
  const notes = pods
    .filter((p) => (p.summary?.selectionKept ?? 0) > 0)
    .map(
      (p) =>
        `  ${p.namespace}/${p.name}: ${p.summary!.selectionKept} connection(s) kept on TCP by its SMC selection (outside the cluster's networks, or a port it does not name): smcr.erdma.io/connect-ports and listen-ports choose them`,
    );
  return notes.length > 0 ? ['', 'Kept on TCP by the selection:', ...notes] : [];
}

/** Pods with loopback connections that fell back: expected, said apart from the reasons. */
function loopbackNotes(pods: readonly PodSmc[]): string[] {
  const notes = pods
    .filter((p) => (p.summary?.loopbackFallbacks ?? 0) > 0)
    .map(
      (p) =>
        `  ${p.namespace}/${p.name}: ${p.summary!.loopbackFallbacks} connection(s) to or from 127.0.0.1 or ::1 fell back to TCP, as expected: no RDMA device serves lo (a kernel with loopback-ism makes them SMC-D)`,
    );
  return notes.length > 0 ? ['', 'Loopback:', ...notes] : [];
}

/** Each reason seen, once, with what it means. */
function legend(pods: readonly PodSmc[]): string[] {
  const seen = new Set<string>();
  for (const p of pods) for (const code of Object.keys(p.summary?.fallbacks ?? {})) seen.add(code);
  if (seen.size === 0) return [];
  return [
    '',
    'Fallback reasons:',
    ...[...seen].sort().map((code) => {
      const r = describeReason(code);
      return `  ${r.name} (${code}): ${r.meaning}`;
    }),
  ];
}

function socketDetails(s: SmcSocket): string {
  const bytes = s.conn ? ` tx ${fmtBytes(s.conn.txBytes)} rx ${fmtBytes(s.conn.rxBytes)}` : '';
  if (s.mode === 'SMCR' && s.link) return `${s.link.dev}:${s.link.port} ${s.link.role}${bytes}`;
  if (s.mode === 'SMCD') return `shared memory (SMC-D)${bytes}`;
  if (!s.fallback) return '';
  const peer =
    s.fallback.peerReason !== '0x00000000'
      ? ` (peer: ${describeReason(s.fallback.peerReason).name})`
      : '';
  return `${describeReason(s.fallback.reason).name}${peer}`;
}

/** An smcss-like table of one pod's connections. */
function socketTable(p: PodSmc): string[] {
  return [
    '',
    `${p.namespace}/${p.name}:`,
    `  ${pad('State', 14)}${pad('Local Address', 24)}${pad('Peer Address', 24)}${pad('Mode', 5)}Details`,
    ...(p.sockets ?? []).map(
      (s) =>
        `  ${pad(s.state, 14)}${pad(s.local, 24)}${pad(s.peer, 24)}${pad(s.mode, 5)}${socketDetails(s)}`,
    ),
  ];
}

/** A person's view: one line per pod, the reasons explained, then (with sockets) an smcss-like table per pod. */
export function formatStatus(pods: readonly PodSmc[]): string {
  if (pods.length === 0) return 'no SMC-R pods on this node\n';
  const lines = [
    `${pad('POD', 40)}${pad('SMC-R', 6)}${pad('SMC-D', 6)}${pad('TCP', 6)}${pad('TX', 10)}${pad('RX', 10)}${pad('DEVICE', 14)}FALLBACK REASONS`,
    ...pods.map(podLine),
    ...legend(pods),
    ...loopbackNotes(pods),
    ...selectionNotes(pods),
    ...plainTcpNotes(pods),
    ...pods.filter((x) => x.sockets).flatMap(socketTable),
  ];
  return `${lines.join('\n')}\n`;
}

export interface CollectOptions {
  readonly binary: NativeBinary;
  readonly hostRoot: string;
  /** Pods (namespace/name) whose socket list is wanted too. */
  readonly socketsOf?: ReadonlySet<string>;
  readonly timeoutMs?: number;
  /** A pod's netns through one of its processes, when the recorded path is not reachable (hostPID). */
  readonly byPod?: (uid: string) => string | undefined;
  /** The host's /proc: with it, the programs of preload pods left on plain TCP are named, with why. */
  readonly procRoot?: string;
}

/** One summary (and, when asked, the sockets) per SMC-R pod. */
export async function collectPodSmc(
  pods: readonly {
    readonly namespace: string;
    readonly name: string;
    readonly uid: string;
    readonly netns: string;
    readonly mechanism?: string;
    readonly select?: string;
  }[],
  o: CollectOptions,
): Promise<PodSmc[]> {
  const where = new Map(
    pods
      .filter((p) => p.netns)
      .map((p) => [
        p.uid,
        reachNetns(o.hostRoot, p.netns, o.byPod ? () => o.byPod?.(p.uid) : undefined),
      ]),
  );
  const selects = new Map(
    pods.flatMap((p) => {
      const path = where.get(p.uid);
      return path && p.select ? [[path, p.select] as const] : [];
    }),
  );
  const summaries = await o.binary.smcSummaries([...where.values()], o.timeoutMs, selects);
  const out: PodSmc[] = [];
  for (const p of pods) {
    const base = {
      namespace: p.namespace,
      name: p.name,
      uid: p.uid,
      ...(p.mechanism ? { mechanism: p.mechanism } : {}),
    };
    if (!p.netns) {
      out.push({ ...base, error: 'no network namespace recorded for the pod' });
      continue;
    }
    const netns = where.get(p.uid) ?? agentNetnsPath(o.hostRoot, p.netns);
    const r = summaries.get(netns) ?? { error: 'not read' };
    if ('error' in r) {
      out.push({ ...base, error: r.error });
      continue;
    }
    let sockets: SmcSocket[] | undefined;
    if (o.socketsOf?.has(`${p.namespace}/${p.name}`)) {
      try {
        sockets = await o.binary.smcSockets(netns);
      } catch (err) {
        out.push({ ...base, summary: r, error: (err as Error).message });
        continue;
      }
    }
    const programs =
      o.procRoot && p.mechanism === 'preload' && r.plainTcp > 0
        ? plainTcpPrograms(o.procRoot, netns)
        : undefined;
    out.push({
      ...base,
      summary: r,
      ...(sockets ? { sockets } : {}),
      ...(programs ? { plainTcpPrograms: programs } : {}),
    });
  }
  return out;
}
