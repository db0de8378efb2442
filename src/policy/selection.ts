// The SMC selection: which of a pod's connections use SMC and which stay plain TCP from their first
// packet (#93). A connection uses SMC only when its destination is inside the cluster's pod (and
// Service) networks and its port is one the pod selects; a listener only on a port it selects.
// The text written here is read by native/src/selection.c (the preload library at connect(), bind()
// and listen(); the smc_hs_ctrl program through our CNI plugin): `nets=CIDR,..;connect=PORTS;listen=PORTS`.
// Why the default is safe: docs/policy.md "Which connections use SMC".
import { SELECTION_ANNOTATIONS } from '../constants.js';
import { clip } from '../util/text.js';
import type { ClusterView } from './types.js';

/** What the C side holds at most (selection.h): SEL_MAX_RANGES items a list, SEL_MAX_NETS nets. */
export const MAX_PORT_ITEMS = 16;
export const MAX_NETS = 32;

/**
 * Alibaba Cloud's own service range: the ECS metadata server (100.100.100.200), its DNS
 * (100.100.2.136, .138) and the other cloud endpoints a VPC reaches. Never a pod, and never SMC
 * (#100): it sits inside RFC 6598's 100.64.0.0/10, which the fallback below would otherwise take in.
 */
export const CLOUD_SERVICE_NETWORK = '100.100.0.0/16';

/**
 * The networks used when the cluster says none (no Node podCIDRs, no profile): the private ranges
 * of RFC 1918 and the shared range of RFC 6598 (where ACK's vSwitches and Service CIDRs live), less
 * CLOUD_SERVICE_NETWORK: 100.64.0.0/10 is written as the six CIDRs around 100.100.0.0/16. An
 * Internet server, where Alibaba's FAQ saw SMC break a handshake, is never in them.
 */
export const PRIVATE_NETWORKS: readonly string[] = [
  '10.0.0.0/8',
  '100.64.0.0/11',
  '100.96.0.0/14',
  '100.101.0.0/16',
  '100.102.0.0/15',
  '100.104.0.0/13',
  '100.112.0.0/12',
  '172.16.0.0/12',
  '192.168.0.0/16',
];

export interface PortItem {
  readonly low: number;
  readonly high: number;
  readonly exclude: boolean;
}

export interface PortsResult {
  /** Canonical text (no spaces), or undefined when the annotation is absent or wrong. */
  readonly text?: string;
  readonly problem?: string;
}

const ITEM = /^(!?)(\d{1,5})(?:-(\d{1,5}))?$/;

/** Reads a ports annotation: `*`, or a comma-separated list of `N`, `N-M`, `!N`, `!N-M`. */
export function parsePorts(raw: string): PortsResult {
  const text = raw.replace(/\s+/g, '');
  if (text === '*') return { text };
  const items = text.split(',');
  if (text === '' || items.length > MAX_PORT_ITEMS)
    return {
      problem: `must be "*" or a list of at most ${MAX_PORT_ITEMS} ports or ranges (6379, 8000-8999, !8080), got "${clip(raw, 64)}"`,
    };
  for (const item of items) {
    // The list's shape first (#102): what is wrong with the list, not only with its item.
    if (item === '')
      return {
        problem: `has an empty item in "${clip(raw, 64)}" (a comma at an end, or two together): write the ports between single commas`,
      };
    if (item === '*' || item === '!*')
      return {
        problem: `"*" means every port and stands alone: write "*", or a list of ports and ranges without it (got "${clip(raw, 64)}")`,
      };
    const m = ITEM.exec(item);
    const low = Number(m?.[2]);
    const high = m?.[3] === undefined ? low : Number(m[3]);
    if (!m || low < 1 || high > 65535 || high < low)
      return {
        problem: `"${clip(item, 32)}" is not a port (1-65535), a range N-M with N ≤ M, or either after "!" to exclude it`,
      };
  }
  return { text };
}

/** The parsed items of canonical text (tests, the rule's messages). */
export function portItems(text: string): PortItem[] {
  if (text === '*') return [];
  return text.split(',').map((item) => {
    const m = ITEM.exec(item) as RegExpExecArray;
    const low = Number(m[2]);
    return { low, high: m[3] === undefined ? low : Number(m[3]), exclude: m[1] === '!' };
  });
}

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/** The IPv4 CIDR in canonical form (host bits cleared), or undefined for anything else. */
export function canonicalCidr(cidr: string): string | undefined {
  const m = CIDR.exec(cidr.trim());
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  const bits = Number(m[5]);
  if (octets.some((o) => o > 255) || bits > 32) return undefined;
  const addr = octets.reduce((a, o) => a * 256 + o, 0);
  const size = 2 ** (32 - bits);
  const base = Math.floor(addr / size) * size;
  const out = [24, 16, 8, 0].map((s) => Math.floor(base / 2 ** s) % 256).join('.');
  return `${out}/${bits}`;
}

/** `cidr` widened to `bits` (no narrower than it was). */
function widen(cidr: string, bits: number): string {
  const [addr = '', len = '32'] = cidr.split('/');
  return canonicalCidr(`${addr}/${Math.min(bits, Number(len))}`) ?? cidr;
}

/**
 * The networks a pod's connections may use SMC in, as the cluster says them (#100): every Node's
 * pod ranges (spec.podCIDRs, and the vSwitch CIDRs the agent publishes for Terway), the Service
 * ranges of the ServiceCIDR objects, and what the cluster profile names; at most MAX_NETS of them.
 * Too many node ranges are widened to their /16s, then /8s. Only when none of these says anything:
 * PRIVATE_NETWORKS (never CLOUD_SERVICE_NETWORK). CLOUD_SERVICE_NETWORK is cut out of whatever a
 * source says, so a widened range never takes in Alibaba Cloud's service endpoints either.
 */
export function selectionNetworks(view: ClusterView): readonly string[] {
  const named = [...(view.podNetworks ?? []), ...(view.serviceNetworks ?? [])];
  const fromNodes = view.nodes.podNetworks;
  if (named.length === 0 && fromNodes.length === 0) return PRIVATE_NETWORKS;
  for (const bits of [32, 16, 8]) {
    const nets = [
      ...new Set([...named, ...fromNodes.map((c) => widen(c, bits))].flatMap(withoutCloud)),
    ].sort();
    if (nets.length <= MAX_NETS) return nets;
  }
  return PRIVATE_NETWORKS;
}

const toInt = (cidr: string): [number, number] => {
  const [addr = '', len = '32'] = cidr.split('/');
  return [addr.split('.').reduce((a, o) => a * 256 + Number(o), 0), Number(len)];
};
const fromInt = (base: number, bits: number): string =>
  `${[24, 16, 8, 0].map((s) => Math.floor(base / 2 ** s) % 256).join('.')}/${bits}`;

/** `cidr` less CLOUD_SERVICE_NETWORK: itself when apart, nothing inside it, its other halves around it. */
export function withoutCloud(cidr: string): string[] {
  const [cloud, cloudBits] = toInt(CLOUD_SERVICE_NETWORK);
  const [base, bits] = toInt(cidr);
  if (bits >= cloudBits)
    return Math.floor(base / 2 ** (32 - cloudBits)) * 2 ** (32 - cloudBits) === cloud ? [] : [cidr];
  const size = 2 ** (32 - bits);
  if (cloud < base || cloud >= base + size) return [cidr];
  // Split in halves down to the cloud range: keep each half that does not hold it.
  const out: string[] = [];
  let b = base;
  for (let len = bits + 1; len <= cloudBits; len++) {
    const half = 2 ** (32 - len);
    const inUpper = cloud >= b + half;
    out.push(fromInt(inUpper ? b : b + half, len));
    if (inUpper) b += half;
  }
  return out.sort();
}

export interface ResolvedSelection {
  /** The text for the preload library and the CNI plugin. */
  readonly text: string;
  readonly connect: string;
  readonly listen: string;
  /** Whether the pod names its ports (then a node that cannot enforce them is worth a warning). */
  readonly named: boolean;
  readonly problems: readonly { annotation: string; message: string }[];
}

/** The pod's selection: its port annotations (every port when absent) over the cluster's networks. */
export function resolveSelection(
  annotations: Readonly<Record<string, string>>,
  view: ClusterView,
): ResolvedSelection {
  const problems: { annotation: string; message: string }[] = [];
  const read = (annotation: string): string => {
    const raw = annotations[annotation];
    if (raw === undefined) return '*';
    const r = parsePorts(raw);
    if (r.problem) problems.push({ annotation, message: r.problem });
    return r.text ?? '*';
  };
  const connect = read(SELECTION_ANNOTATIONS.connectPorts);
  const listen = read(SELECTION_ANNOTATIONS.listenPorts);
  const nets = selectionNetworks(view).join(',');
  return {
    text: `nets=${nets};connect=${connect};listen=${listen}`,
    connect,
    listen,
    named:
      annotations[SELECTION_ANNOTATIONS.connectPorts] !== undefined ||
      annotations[SELECTION_ANNOTATIONS.listenPorts] !== undefined,
    problems,
  };
}
