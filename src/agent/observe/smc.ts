// What a pod's connections really run on: the native binary's `smc sockets|summary|stats`
// (smc_diag and the SMC generic netlink family, read inside the pod's network namespace), the
// fallback reason codes decoded, and the per-pod view the agent samples and `status` prints
// (../../cli/output/smc-status.ts renders it for people).
import { plainTcpPrograms, type PlainTcpProgram } from './programs.js';
import { existsSync } from 'node:fs';
import type { NativeBinary } from '../../native/binary.js';
import type { RecordedPod, SmcSocket, SmcSummary } from '../../native/contract.js';
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

/** What a pod whose SMC selection its node cannot enforce is told (its SMCREnabled Event, `status`). */
export function selectionNotEnforced(why: string | undefined): string {
  return (
    `its SMC selection is not enforced on this node${why ? ` (${why})` : ''}: ` +
    'every TCP connection of the pod uses SMC, whatever smcr.erdma.io/connect-ports and listen-ports say'
  );
}

export interface PodSmc {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** How the plugin made the pod's TCP SMC, as it recorded it. */
  readonly mechanism?: string;
  /** `none` where the node's mechanism cannot keep to the pod's SMC selection, as recorded, and why. */
  readonly selection?: string;
  readonly selectionWhy?: string;
  readonly summary?: SmcSummary;
  /** Only when asked for (status --pod). */
  readonly sockets?: readonly SmcSocket[];
  /** Why the pod could not be read (its netns is gone, the kernel has no smc_diag, ...). */
  readonly error?: string;
  /** Under preload, with plain TCP connections: the programs holding them, and why (./programs.ts). */
  readonly plainTcpPrograms?: readonly PlainTcpProgram[];
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

/** What a pod's entry holds from its record alone: who, how, and whether its selection holds. */
function recordedPart(p: RecordedPod): PodSmc {
  return {
    namespace: p.namespace,
    name: p.name,
    uid: p.uid,
    ...(p.mechanism ? { mechanism: p.mechanism } : {}),
    ...(p.selection ? { selection: p.selection } : {}),
    ...(p.selectionWhy ? { selectionWhy: p.selectionWhy } : {}),
  };
}

/** One summary (and, when asked, the sockets) per SMC-R pod. */
export async function collectPodSmc(
  pods: readonly RecordedPod[],
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
    const base = recordedPart(p);
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
