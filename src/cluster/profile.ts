// Offline cluster profile (YAML): the cluster's driver mode, IP families and, optionally, its nodes.
import { readFileSync } from 'node:fs';
import '../util/zod.js';
import * as z from 'zod/mini';
import { AppError } from '../errors.js';
import { NodeIndex } from '../policy/nodes.js';
import { canonicalCidr, MAX_NETS } from '../policy/selection.js';
import type { ClusterView, NodeFacts, NodeSet } from '../policy/types.js';
import { parseYamlFirst } from '../util/yaml.js';
import { nodeFacts } from './view.js';

export const PROFILE_API_VERSION = 'smcr.erdma.io/v1alpha1';
export const PROFILE_KIND = 'ClusterProfile';

const nodeObject = z.looseObject({
  metadata: z.looseObject({ name: z.string().check(z.minLength(1)) }),
});
const nodeList = z.looseObject({ items: z.array(nodeObject) });

/** IPv4 CIDRs, at most MAX_NETS between the two lists (what the C side holds). */
const cidrs = z.array(z.string()).check(
  z.maxLength(MAX_NETS),
  z.refine(
    (a) => a.every((c) => canonicalCidr(c) !== undefined),
    'each must be an IPv4 CIDR such as 10.0.0.0/16',
  ),
);

export const profileSchema = z.strictObject({
  apiVersion: z.optional(z.literal(PROFILE_API_VERSION)),
  kind: z.optional(z.literal(PROFILE_KIND)),
  driverMode: z.optional(z.enum(['default', 'compat', 'ofed'])),
  ipFamilies: z.optional(
    z.array(z.enum(['IPv4', 'IPv6'])).check(
      z.minLength(1),
      z.maxLength(2),
      z.refine((a) => new Set(a).size === a.length, 'ipFamilies must not repeat a family'),
    ),
  ),
  /** Whether the cluster enables RDMA (rdma/hca) for pods without hostNetwork (an IPv6 cluster option). */
  rdmaNonHostNetwork: z.optional(z.boolean()),
  /**
   * The pod networks the Nodes' podCIDRs do not show: Terway's vSwitch ranges on ACK (its pods take
   * addresses from the vSwitches, not from a node range). Where SMC may pay (docs/policy.md).
   */
  podNetworks: z.optional(cidrs),
  /** The Service CIDR: a ClusterIP is a pod of the cluster behind kube-proxy's DNAT. */
  serviceNetworks: z.optional(cidrs),
  nodes: z.optional(z.union([z.array(nodeObject), nodeList])),
});

export type Profile = z.infer<typeof profileSchema>;

/** Embedded default: an IPv4 cluster in default driver mode whose nodes are not known. */
export const DEFAULT_PROFILE: Profile = { driverMode: 'default', ipFamilies: ['IPv4'] };

function nodesOf(value: unknown): NodeFacts[] {
  const list = Array.isArray(value)
    ? value
    : ((value as { items?: unknown[] } | undefined)?.items ?? []);
  return list.map((n: unknown) => nodeFacts(n)).filter((n): n is NodeFacts => n !== undefined);
}

/** Validates a parsed profile document, naming the source in errors. */
export function parseProfile(doc: unknown, source: string): Profile {
  const r = profileSchema.safeParse(doc ?? {});
  if (!r.success) {
    throw new AppError(
      'PROFILE_INVALID',
      `${source}: invalid cluster profile:\n${z.prettifyError(r.error)}`,
    );
  }
  return r.data;
}

function readYamlFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AppError(
      'INPUT_UNREADABLE',
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).message}`,
    );
  }
  return parseYamlFirst(text, file);
}

export function loadProfileFile(file: string): Profile {
  return parseProfile(readYamlFile(file), file);
}

/** Reads a NodeList, a single Node, or a list of Nodes from a file. */
/** The kinds a node list may hold: Nodes, in a NodeList or List (or none named, trimmed by hand). */
const NODE_KINDS = new Set(['Node', 'NodeList', 'List', 'ServiceCIDR', 'ServiceCIDRList']);

function refuseOtherKinds(doc: unknown, file: string): void {
  const kindOf = (v: unknown): string | undefined =>
    typeof (v as { kind?: unknown } | null)?.kind === 'string'
      ? (v as { kind: string }).kind
      : undefined;
  const items = Array.isArray(doc) ? doc : ((doc as { items?: unknown } | null)?.items ?? []);
  const kinds = [kindOf(doc), ...(Array.isArray(items) ? items.map(kindOf) : [])].filter(
    (k): k is string => k !== undefined && !NODE_KINDS.has(k),
  );
  if (kinds.length > 0)
    throw new AppError(
      'PROFILE_INVALID',
      `${file}: holds ${[...new Set(kinds)].join(', ')}, not Nodes: --nodes takes what \`kubectl get nodes,servicecidrs -o yaml\` prints (Nodes, and the ServiceCIDRs whose ranges the SMC selection takes in)`,
    );
}

/** What a --nodes file says: its Nodes, and the ranges of its ServiceCIDRs (IPv4, canonical). */
export interface NodesFile {
  readonly nodes: NodeFacts[];
  readonly serviceNetworks: string[];
}

export function loadNodesFile(file: string): NodesFile {
  const doc = readYamlFile(file);
  refuseOtherKinds(doc, file);
  const list: unknown[] = Array.isArray(doc)
    ? doc
    : (doc as { items?: unknown })?.items
      ? ((doc as { items: unknown[] }).items ?? [])
      : [doc];
  const isKind = (v: unknown, k: string): boolean => (v as { kind?: unknown } | null)?.kind === k;
  const nodes = nodesOf(list.filter((v) => !isKind(v, 'ServiceCIDR')));
  if (nodes.length === 0) throw new AppError('PROFILE_INVALID', `${file}: no Node objects found`);
  const serviceNetworks = [
    ...new Set(
      list
        .filter((v) => isKind(v, 'ServiceCIDR'))
        .flatMap((v) => (v as { spec?: { cidrs?: unknown } }).spec?.cidrs ?? [])
        .flatMap((c) => (typeof c === 'string' ? (canonicalCidr(c) ?? []) : [])),
    ),
  ].sort();
  return { nodes, serviceNetworks };
}

/**
 * Builds the view from a profile and, optionally, a separate node list or node set (which wins;
 * a live view passes the set its watch keeps up to date).
 */
export function viewFromProfile(
  profile: Profile,
  extraNodes?: readonly NodeFacts[] | NodeSet,
  /** The Service ranges of the cluster's ServiceCIDR objects (live, or given to `check`). */
  serviceNetworks: readonly string[] = [],
): ClusterView {
  const list = extraNodes ?? (profile.nodes !== undefined ? nodesOf(profile.nodes) : undefined);
  const nodes: NodeSet | undefined = Array.isArray(list)
    ? new NodeIndex(list)
    : (list as NodeSet | undefined);
  return Object.freeze({
    ...(profile.driverMode ? { driverMode: profile.driverMode } : {}),
    ...(profile.ipFamilies ? { ipFamilies: profile.ipFamilies } : {}),
    ...(profile.rdmaNonHostNetwork !== undefined
      ? { rdmaNonHostNetwork: profile.rdmaNonHostNetwork }
      : {}),
    ...networksOf(profile),
    ...(serviceNetworks.length > 0 ? { serviceNetworks } : {}),
    nodesKnown: nodes !== undefined,
    nodes: nodes ?? EMPTY,
  });
}

const EMPTY: NodeSet = new NodeIndex();

/** The profile's pod and Service networks, canonical, each once. */
function networksOf(profile: Profile): { podNetworks?: readonly string[] } {
  const all = [...(profile.podNetworks ?? []), ...(profile.serviceNetworks ?? [])];
  if (all.length === 0) return {};
  return { podNetworks: [...new Set(all.map((c) => canonicalCidr(c) ?? c))] };
}
