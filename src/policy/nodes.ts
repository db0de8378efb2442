// The nodes the policy knows, indexed so that a review costs the same in a 20,000-node cluster as
// in a 5-node one: by name, and by whether each node can run SMC-R under a cluster driver mode.
// A live view applies each watch event to one index in O(1) (src/cluster/live.ts); offline views
// build one from their node list.
import { NODE_LABELS } from '../constants.js';
import { nodeStatus } from './eligibility.js';
import type { DriverMode, NodeFacts, NodeSet } from './types.js';

type Mode = DriverMode | undefined;

export class NodeIndex implements NodeSet {
  private readonly byName = new Map<string, NodeFacts>();
  /** For each cluster driver mode asked about so far: the nodes whose status is ok under it. */
  private readonly usableByMode = new Map<Mode, Set<NodeFacts>>();
  private preload = 0;
  private readonly reserved = new Map<string, number>();
  private readonly cidrs = new Map<string, number>();
  private cidrList: readonly string[] | undefined = [];

  constructor(nodes: Iterable<NodeFacts> = []) {
    for (const n of nodes) this.upsert(n);
  }

  get size(): number {
    return this.byName.size;
  }

  get preloadNodes(): number {
    return this.preload;
  }

  get reservedPorts(): ReadonlyMap<string, number> {
    return this.reserved;
  }

  /** Sorted once per change of the set of ranges, not per review. */
  get podNetworks(): readonly string[] {
    this.cidrList ??= [...this.cidrs.keys()].sort();
    return this.cidrList;
  }

  get(name: string): NodeFacts | undefined {
    return this.byName.get(name);
  }

  [Symbol.iterator](): Iterator<NodeFacts> {
    return this.byName.values();
  }

  usable(mode: Mode): ReadonlySet<NodeFacts> {
    let set = this.usableByMode.get(mode);
    if (!set) {
      set = new Set();
      for (const n of this.byName.values()) if (nodeStatus(n, mode).state === 'ok') set.add(n);
      this.usableByMode.set(mode, set);
    }
    return set;
  }

  /** Adds a node, or replaces the node of the same name. */
  upsert(node: NodeFacts): void {
    const old = this.byName.get(node.name);
    if (old === node) return;
    if (old) this.forget(old);
    this.byName.set(node.name, node);
    if (isPreload(node)) this.preload++;
    this.countReserved(node, 1);
    this.countCidrs(node, 1);
    for (const [mode, set] of this.usableByMode)
      if (nodeStatus(node, mode).state === 'ok') set.add(node);
  }

  remove(name: string): void {
    const old = this.byName.get(name);
    if (!old) return;
    this.byName.delete(name);
    this.forget(old);
  }

  private forget(old: NodeFacts): void {
    for (const set of this.usableByMode.values()) set.delete(old);
    if (isPreload(old)) this.preload--;
    this.countReserved(old, -1);
    this.countCidrs(old, -1);
  }

  private countCidrs(node: NodeFacts, by: 1 | -1): void {
    for (const c of node.podCIDRs ?? []) {
      const n = (this.cidrs.get(c) ?? 0) + by;
      if (n > 0) this.cidrs.set(c, n);
      else this.cidrs.delete(c);
      if (n === 0 || n === 1) this.cidrList = undefined;
    }
  }

  private countReserved(node: NodeFacts, by: 1 | -1): void {
    for (const label of RESERVED_LABELS) {
      const v = node.labels[label];
      if (v === undefined) continue;
      const key = `${label}=${v}`;
      const n = (this.reserved.get(key) ?? 0) + by;
      if (n > 0) this.reserved.set(key, n);
      else this.reserved.delete(key);
    }
  }

  clear(): void {
    this.byName.clear();
    this.usableByMode.clear();
    this.preload = 0;
    this.reserved.clear();
    this.cidrs.clear();
    this.cidrList = [];
  }
}

const RESERVED_LABELS = [NODE_LABELS.erdmaReservedPorts, NODE_LABELS.smcReservedPorts] as const;

const isPreload = (n: NodeFacts): boolean => n.labels[NODE_LABELS.mechanism] === 'preload';
