// The cluster view the policy reads: an interface, a static implementation, and Node → NodeFacts.
import { isObject, stringMap } from '../util/json.js';
import { canonicalCidr } from '../policy/selection.js';
import { NODE_ANNOTATIONS } from '../constants.js';
import type { ClusterView, NodeFacts } from '../policy/types.js';

/** Anything that can hand the policy its current view of the cluster. */
export interface ClusterViewSource {
  /** The latest view; cheap to call on every request. */
  current(): ClusterView;
  /** Whether the first full sync has happened (readiness). */
  readonly synced: boolean;
  /** Stops background work (watches). */
  close(): Promise<void>;
}

export class StaticViewSource implements ClusterViewSource {
  readonly synced = true;
  constructor(private readonly view: ClusterView) {}
  current(): ClusterView {
    return this.view;
  }
  async close(): Promise<void> {}
}

/**
 * Strings many nodes share (label values, kernel and OS image), kept once: a large cluster's view
 * holds one copy of its zone or instance type, not one per node. Bounded: cleared when full.
 */
export class StringPool {
  private readonly strings = new Map<string, string>();
  constructor(private readonly max = 100_000) {}

  get(s: string): string {
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    if (this.strings.size >= this.max) this.strings.clear();
    this.strings.set(s, s);
    return s;
  }
}

const SAME = { get: (s: string): string => s };

/** Reads a Node object (as the API server or `kubectl get node -o yaml` gives it). */
export function nodeFacts(
  node: unknown,
  pool: Pick<StringPool, 'get'> = SAME,
): NodeFacts | undefined {
  if (!isObject(node) || !isObject(node.metadata) || typeof node.metadata.name !== 'string')
    return undefined;
  const info = isObject(node.status) && isObject(node.status.nodeInfo) ? node.status.nodeInfo : {};
  return {
    name: pool.get(node.metadata.name),
    labels: stringMap(node.metadata.labels, (s) => pool.get(s)),
    ...(typeof info.kernelVersion === 'string'
      ? { kernelVersion: pool.get(info.kernelVersion) }
      : {}),
    ...(typeof info.osImage === 'string' ? { osImage: pool.get(info.osImage) } : {}),
    ...podCIDRsOf(node.spec, node.metadata.annotations, pool),
  };
}

/**
 * spec.podCIDRs (or the older spec.podCIDR) and the pod networks the agent read from the ECS
 * metadata (NODE_ANNOTATIONS.podNetworks: Terway's vSwitches): the IPv4 ones, canonical, each
 * once; nothing when none.
 */
function podCIDRsOf(
  spec: unknown,
  annotations: unknown,
  pool: Pick<StringPool, 'get'>,
): { podCIDRs?: readonly string[] } {
  const raw: unknown[] = [];
  if (isObject(spec)) raw.push(...(Array.isArray(spec.podCIDRs) ? spec.podCIDRs : [spec.podCIDR]));
  const published = isObject(annotations) ? annotations[NODE_ANNOTATIONS.podNetworks] : undefined;
  if (typeof published === 'string') raw.push(...published.split(','));
  const cidrs = [
    ...new Set(
      raw.flatMap((c) => {
        const v4 = typeof c === 'string' ? canonicalCidr(c) : undefined;
        return v4 === undefined ? [] : [v4];
      }),
    ),
  ].map((c) => pool.get(c));
  return cidrs.length > 0 ? { podCIDRs: cidrs } : {};
}

/** Whether two facts say the same (a node's status update changes none of them). */
export function sameFacts(a: NodeFacts, b: NodeFacts): boolean {
  if (a.name !== b.name || a.kernelVersion !== b.kernelVersion || a.osImage !== b.osImage)
    return false;
  if ((a.podCIDRs ?? []).join() !== (b.podCIDRs ?? []).join()) return false;
  let n = 0;
  for (const k in a.labels) {
    if (!Object.hasOwn(b.labels, k) || a.labels[k] !== b.labels[k]) return false;
    n += 1;
  }
  for (const _ in b.labels) n -= 1;
  return n === 0;
}
