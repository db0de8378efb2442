// The admission rules: each a small named function from the pod's context to denials and warnings.
import { CONTAINER_ANNOTATION, SMCR_ANNOTATION } from '../constants.js';
import type { PolicyConfig } from '../config/schema.js';
import { nodeStatus } from './eligibility.js';
import { MIN_KERNEL_TEXT } from './kernel.js';
import { wholeQuantity } from './quantity.js';
import { clip } from '../util/text.js';
import { keyPath } from './locate.js';
import { arrayOf, isObject } from '../util/json.js';
import {
  Budget,
  placement,
  placementTooLarge,
  PLACEMENT_LIMITS,
  type Placement,
} from './scheduling.js';
import type { ResolvedTuning } from './settings.js';
import type { ClusterView, Denial, DriverMode, NodeFacts, PodLocation } from './types.js';

export interface RuleContext {
  readonly loc: PodLocation;
  readonly view: ClusterView;
  readonly config: PolicyConfig;
  readonly annotations: Readonly<Record<string, string>>;
  readonly tuning: ResolvedTuning;
}

export interface RuleOutcome {
  readonly denials: Denial[];
  readonly warnings: string[];
}

export type Rule = (ctx: RuleContext) => RuleOutcome;

const none = (): RuleOutcome => ({ denials: [], warnings: [] });
const deny = (rule: string, path: string, message: string): RuleOutcome => ({
  denials: [{ rule, path, message }],
  warnings: [],
});
const warn = (...warnings: string[]): RuleOutcome => ({ denials: [], warnings });

const FIX_NODES = `Alibaba Cloud Linux 3 nodes with kernel >= ${MIN_KERNEL_TEXT} and eRDMA driver mode "default"`;

function annotationPath(ctx: RuleContext, key = SMCR_ANNOTATION): string {
  return keyPath(`${ctx.loc.prefix}metadata.annotations`, key);
}

/** hostNetwork pods share the host's network namespace: tcp2smc there would switch the whole node. */
export const hostNetwork: Rule = (ctx) =>
  ctx.loc.spec.hostNetwork === true
    ? deny(
        'host-network',
        `${ctx.loc.prefix}spec.hostNetwork`,
        'SMC-R cannot be enabled for a hostNetwork pod: it would switch every TCP socket of the node to SMC. ' +
          `Remove hostNetwork: true, or remove the ${SMCR_ANNOTATION} annotation.`,
      )
    : none();

/** SMC-R works only when the eRDMA driver runs in its default mode. */
export const driverMode: Rule = (ctx) => {
  const mode = ctx.view.driverMode;
  if (mode === undefined || mode === 'default') return none();
  return deny(
    'driver-mode',
    annotationPath(ctx),
    `the cluster's eRDMA driver runs in "${mode}" mode, and SMC-R works only in "default" mode. ` +
      `Ask the cluster admin to switch the eRDMA driver to "default" on the nodes that run this pod ` +
      `(on ACK, the eRDMA controller's preferDriver setting), or remove the ${SMCR_ANNOTATION} annotation.`,
  );
};

function describeNodes(
  list: readonly { node: NodeFacts; reason: string }[],
  total: number,
): string {
  const shown = list.slice(0, 5).map(({ node, reason }) => `${node.name} (${reason})`);
  const more = total > 5 ? `, and ${total - 5} more` : '';
  return shown.join(', ') + more;
}

/** A pod whose node constraints are larger than the webhook judges: refused, with what to simplify. */
export const objectSize: Rule = (ctx) => {
  const big = placementTooLarge(ctx.loc.spec, ctx.loc.prefix);
  if (!big) return none();
  return deny(
    'object-size',
    big.path,
    `the pod's node constraints hold ${big.what}, and the webhook judges at most ${big.limit}, far more than any pod needs. ` +
      `Simplify them, or remove the ${SMCR_ANNOTATION} annotation.`,
  );
};

/** What the nodes a pod may land on say, read until one can run SMC-R or the budget is spent. */
interface Candidates {
  readonly ok: boolean;
  readonly count: number;
  /** The first few nodes that cannot run SMC-R, and how many there are. */
  readonly bad: { node: NodeFacts; reason: string }[];
  readonly badCount: number;
  readonly overBudget: boolean;
}

function candidates(
  nodes: Iterable<NodeFacts>,
  where: Placement,
  mode: DriverMode | undefined,
  budget: Budget,
): Candidates {
  const out = {
    ok: false,
    count: 0,
    bad: [] as { node: NodeFacts; reason: string }[],
    badCount: 0,
    overBudget: false,
  };
  for (const node of nodes) {
    if (budget.spent) return { ...out, overBudget: true };
    if (!where.matches(node, budget)) continue;
    out.count += 1;
    const status = nodeStatus(node, mode);
    if (status.state === 'ok') return { ...out, ok: true };
    if (status.state === 'bad') {
      out.badCount += 1;
      if (out.bad.length < 5) out.bad.push({ node, reason: status.reason });
    }
  }
  return out;
}

/** The nodes to read for a pod: its one named node, else every node of the view. */
function nodesFor(view: ClusterView, where: Placement): Iterable<NodeFacts> {
  if (where.nodeName === undefined) return view.nodes;
  const named = view.nodes.get(where.nodeName);
  return named ? [named] : [];
}

/** Whether a node that can run SMC-R is among those the pod may land on (the common case, first). */
function usableMatch(view: ClusterView, where: Placement, budget: Budget): boolean {
  const usable = view.nodes.usable(view.driverMode);
  if (!where.pinned) return usable.size > 0;
  if (where.nodeName !== undefined) return false; // nodesFor reads the one node
  for (const node of usable) {
    if (budget.spent) return false;
    if (where.matches(node, budget)) return true;
  }
  return false;
}

/** The pod must be able to land on at least one node that can run SMC-R. */
export const nodeEligibility: Rule = (ctx) => {
  const { view, loc } = ctx;
  if (!view.nodesKnown) {
    return warn('node list unknown: kernel and driver checks on nodes were skipped');
  }
  if (placementTooLarge(loc.spec, loc.prefix)) return none(); // objectSize refuses it
  const where = placement(loc.spec, loc.prefix);
  const budget = new Budget();
  if (usableMatch(view, where, budget)) return none();
  const found = budget.spent
    ? undefined
    : candidates(nodesFor(view, where), where, view.driverMode, budget);
  if (!found || found.overBudget) {
    return deny(
      'object-size',
      where.pinnedBy[0] ?? annotationPath(ctx),
      `checking where this pod may run against the ${view.nodes.size} nodes of the cluster takes more than ` +
        `${PLACEMENT_LIMITS.checks} label comparisons, the most the webhook makes for one pod. Simplify ${where.pinnedBy.join(' and ')}.`,
    );
  }
  if (found.ok) return none();
  if (found.count === 0) {
    return where.pinned
      ? warn(`no known node matches ${where.pinnedBy.join(' and ')}; node checks were skipped`)
      : warn('the cluster view has no nodes; node checks were skipped');
  }
  if (found.badCount < found.count) {
    return warn(
      'no node this pod may run on is known to support SMC-R; some nodes report no kernel version',
    );
  }
  const subject = where.pinned
    ? `this pod may only run on nodes that cannot run SMC-R (${where.pinnedBy.join(', ')})`
    : 'no node in the cluster can run SMC-R';
  return deny(
    'node-eligibility',
    where.pinnedBy[0] ?? annotationPath(ctx),
    `${subject}: ${describeNodes(found.bad, found.badCount)}. Run the pod on ${FIX_NODES}, or remove the ${SMCR_ANNOTATION} annotation.`,
  );
};

function isIPv6(addr: unknown): boolean {
  return typeof addr === 'string' && addr.includes(':');
}

/** SMC-R carries IPv4 only. */
export const ipFamily: Rule = (ctx) => {
  const out = none();
  const fams = ctx.view.ipFamilies ?? [];
  if (fams.length > 0 && !fams.includes('IPv4')) {
    return deny(
      'ip-family',
      annotationPath(ctx),
      `the cluster is IPv6-only, and SMC-R carries IPv4 only. Remove the ${SMCR_ANNOTATION} annotation.`,
    );
  }
  if (fams.includes('IPv6'))
    out.warnings.push('dual-stack cluster: IPv6 connections of this pod stay on TCP');
  const dns = isObject(ctx.loc.spec.dnsConfig) ? ctx.loc.spec.dnsConfig : {};
  const v6dns = arrayOf(dns.nameservers).filter(isIPv6);
  const v6alias = arrayOf(ctx.loc.spec.hostAliases).filter((a) => isObject(a) && isIPv6(a.ip));
  if (!ctx.tuning.keepIPv6 && v6dns.length > 0) {
    out.denials.push({
      rule: 'ip-family',
      path: `${ctx.loc.prefix}spec.dnsConfig.nameservers`,
      message:
        `the pod uses IPv6 DNS nameservers (${v6dns.join(', ')}), but SMC-R pods get IPv6 turned off, so name ` +
        `resolution would fail. Use IPv4 nameservers, or set smcr.erdma.io/keep-ipv6: "true".`,
    });
  }
  if (!ctx.tuning.keepIPv6 && v6alias.length > 0) {
    out.warnings.push('IPv6 hostAliases are unreachable: SMC-R pods get IPv6 turned off');
  }
  if (ctx.tuning.keepIPv6 && !fams.includes('IPv6')) {
    out.warnings.push('IPv6 stays on in this pod; its IPv6 connections stay on TCP');
  }
  return out;
};

interface ResourceUse {
  readonly path: string;
  readonly request?: unknown;
  readonly limit?: unknown;
}

export function resourceUses(loc: PodLocation, resource: string): ResourceUse[] {
  const uses: ResourceUse[] = [];
  for (const field of ['initContainers', 'containers'] as const) {
    arrayOf(loc.spec[field]).forEach((c, i) => {
      const res = isObject(c) && isObject(c.resources) ? c.resources : {};
      const req = isObject(res.requests) ? res.requests[resource] : undefined;
      const lim = isObject(res.limits) ? res.limits[resource] : undefined;
      if (req !== undefined || lim !== undefined) {
        uses.push({ path: `${loc.prefix}spec.${field}[${i}].resources`, request: req, limit: lim });
      }
    });
  }
  return uses;
}

/**
 * Count of a device resource: a quantity (Kubernetes' rules: `"1k"` is 1000, `"1000m"` is 1) whose
 * value is a whole non-negative number, as a string or a number; undefined for anything else.
 */
export function deviceCount(v: unknown): number | undefined {
  const n = wholeQuantity(v);
  if (n === undefined || n < 0n) return undefined;
  return n > MAX_COUNT ? Number.MAX_SAFE_INTEGER : Number(n);
}

const MAX_COUNT = BigInt(Number.MAX_SAFE_INTEGER);

function checkUse(use: ResourceUse, r: string): Denial | undefined {
  const req = use.request === undefined ? undefined : deviceCount(use.request);
  const lim = use.limit === undefined ? undefined : deviceCount(use.limit);
  if (
    (use.request !== undefined && req === undefined) ||
    (use.limit !== undefined && lim === undefined)
  ) {
    return {
      rule: 'erdma-resource',
      path: keyPath(`${use.path}.limits`, r),
      message: `${r} must be a whole number of devices.`,
    };
  }
  if (use.limit === undefined) {
    return {
      rule: 'erdma-resource',
      path: keyPath(`${use.path}.limits`, r),
      message: `${r} is requested without a limit; an extended resource needs limits equal to requests. Add limits: {${r}: ${String(use.request)}}.`,
    };
  }
  if (req !== undefined && req !== lim) {
    return {
      rule: 'erdma-resource',
      path: keyPath(`${use.path}.requests`, r),
      message: `${r} requests (${req}) differ from limits (${lim}); extended resources must request exactly their limit.`,
    };
  }
  return undefined;
}

/** aliyun/erdma requests must equal limits, and setting it to 0 everywhere contradicts asking for SMC-R. */
export const erdmaResource: Rule = (ctx) => {
  const r = ctx.config.resourceName;
  const uses = resourceUses(ctx.loc, r);
  const denials = uses.map((u) => checkUse(u, r)).filter((d): d is Denial => d !== undefined);
  if (denials.length > 0) return { denials, warnings: [] };
  const counts = uses.map((u) => deviceCount(u.limit) ?? 0);
  if (uses.length > 0 && counts.every((c) => c === 0)) {
    return deny(
      'erdma-resource',
      keyPath(`${uses[0]?.path ?? ''}.limits`, r),
      `the pod asks for SMC-R but sets ${r} to 0, so it would get no eRDMA device. Remove the ${r} entries ` +
        `(one device is injected) or set them to 1.`,
    );
  }
  return none();
};

/** Tuning annotations must hold values the kernel accepts. */
export const tuning: Rule = (ctx) => ({
  denials: ctx.tuning.problems.map((p) => ({
    rule: 'tuning',
    path: annotationPath(ctx, p.annotation),
    message: `${p.annotation} ${p.message}.`,
  })),
  warnings: [...ctx.tuning.warnings],
});

/** smcr.erdma.io/container must name a container of the pod. */
export const containerChoice: Rule = (ctx) => {
  const name = ctx.annotations[CONTAINER_ANNOTATION];
  if (name === undefined) return none();
  const names = arrayOf(ctx.loc.spec.containers).map((c) => (isObject(c) ? c.name : undefined));
  if (names.includes(name)) return none();
  return deny(
    'container',
    annotationPath(ctx, CONTAINER_ANNOTATION),
    `${CONTAINER_ANNOTATION} names container "${clip(name, 64)}", which the pod does not have (containers: ${clip(names.join(', '), 253) || 'none'}).`,
  );
};

/** Every rule run for a pod that asks for SMC-R, in the order their verdicts are reported. */
export const RULES: readonly Rule[] = [
  objectSize,
  hostNetwork,
  driverMode,
  nodeEligibility,
  ipFamily,
  erdmaResource,
  tuning,
  containerChoice,
];
