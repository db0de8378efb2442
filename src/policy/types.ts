// Types shared by every policy rule: the inputs (object, cluster view, config) and the verdict.

/**
 * One RFC 6902 operation of the patches the policy makes: it adds, removes and replaces only (the
 * operations fast-json-patch's `compare` emits, which test/unit/policy/patch.test.ts holds it to).
 */
export type PatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown };

export type DriverMode = 'default' | 'compat' | 'ofed';

export type IPFamily = 'IPv4' | 'IPv6';

export type { JsonObject, StringMap } from '../util/json.js';
import type { JsonObject, StringMap } from '../util/json.js';

/** What the policy knows about one node. */
export interface NodeFacts {
  readonly name: string;
  /** The node's labels, with no prototype (see StringMap). */
  readonly labels: StringMap;
  readonly kernelVersion?: string;
  readonly osImage?: string;
  /**
   * The node's IPv4 pod ranges, canonical: spec.podCIDRs, and the vSwitch CIDRs the agent
   * publishes (NODE_ANNOTATIONS.podNetworks, Terway); absent when it has none.
   */
  readonly podCIDRs?: readonly string[];
}

/** The nodes of a view: by name, in order, and those that can run SMC-R (src/policy/nodes.ts). */
export interface NodeSet extends Iterable<NodeFacts> {
  readonly size: number;
  get(name: string): NodeFacts | undefined;
  /** The nodes whose status (eligibility.ts) is ok under this cluster driver mode. */
  usable(mode: DriverMode | undefined): ReadonlySet<NodeFacts>;
  /** How many nodes the agent labelled with the preload mechanism (0: the plan is skipped). */
  readonly preloadNodes: number;
  /**
   * The port ranges nodes reserve in every netns (labels smcr.erdma.io/erdma-reserved-ports and
   * smc-reserved-ports), as `label=LOW-HIGH`, with how many nodes carry each: a handful of entries
   * whatever the cluster's size.
   */
  readonly reservedPorts: ReadonlyMap<string, number>;
  /** Every node's IPv4 pod range, each once, sorted (kept up to date as nodes come and go). */
  readonly podNetworks: readonly string[];
}

/**
 * The policy's view of the cluster. `nodesKnown` is false when nothing is known of the
 * nodes (offline without a node list, or before the first sync): node checks then only warn.
 */
export interface ClusterView {
  readonly driverMode?: DriverMode;
  readonly ipFamilies?: readonly IPFamily[];
  /** The cluster's "RDMA for non-hostNetwork pods" option (undefined: not known, not checked). */
  readonly rdmaNonHostNetwork?: boolean;
  /**
   * The cluster's pod and Service networks as its profile names them (Terway's vSwitch ranges, the
   * Service CIDR); the Nodes' podCIDRs come from `nodes`. Together: where SMC may pay (selection.ts).
   */
  readonly podNetworks?: readonly string[];
  /** The cluster's Service ranges from its ServiceCIDR objects (networking.k8s.io/v1), IPv4. */
  readonly serviceNetworks?: readonly string[];
  readonly nodesKnown: boolean;
  readonly nodes: NodeSet;
}

export interface Denial {
  /** Stable rule id, e.g. `host-network`. */
  readonly rule: string;
  /** What is wrong and how to fix it. */
  readonly message: string;
  /** Field path in kubectl style, e.g. `spec.template.spec.hostNetwork`. */
  readonly path: string;
}

/** A warning, under the id of the rule that raised it (`rule` in JSON, SARIF's ruleId). */
export interface Warning {
  readonly rule: string;
  readonly message: string;
}

export interface Verdict {
  readonly allowed: boolean;
  readonly denials: readonly Denial[];
  readonly warnings: readonly Warning[];
}

export interface PolicyResult extends Verdict {
  /** Whether the object's pod asks for SMC-R (annotation parsed as true). */
  readonly smcr: boolean;
  /** True when the object carries no SMC-R annotation at all (fast path, untouched). */
  readonly untouched: boolean;
  /** For a Pod that is allowed: the RFC 6902 patch (empty when nothing changes). */
  readonly patch: readonly PatchOperation[];
  /** For a Pod: the object after mutation (same reference as the input when nothing changes). */
  readonly mutated?: JsonObject;
}

/** Where a pod lives inside an object: the pod's metadata and spec, and the path prefix for messages. */
export interface PodLocation {
  readonly kind: string;
  readonly metadata: JsonObject;
  readonly spec: JsonObject;
  /** kubectl-style prefix for the pod template, e.g. `spec.template.` ('' for a Pod). */
  readonly prefix: string;
  /** JSON Pointer prefix for the pod template, e.g. `/spec/template` ('' for a Pod). */
  readonly pointer: string;
  readonly isPod: boolean;
}
