// node-eligibility: the pod must be able to land on at least one node that can run SMC-R.
import { SMCR_ANNOTATION } from '../../constants.js';
import { nodeStatus } from '../eligibility.js';
import { MIN_KERNEL_TEXT } from '../kernel.js';
import { Budget, placement, placementTooLarge, type Placement } from '../scheduling.js';
import type { ClusterView, DriverMode, NodeFacts } from '../types.js';
import { tooManyComparisons } from './object-size.js';
import { annotationPath, deny, none, warn, type Rule, type RuleOutcome } from './rule.js';
import type { RuleContext } from './rule.js';

const FIX_NODES = `Alibaba Cloud Linux 3 nodes with kernel >= ${MIN_KERNEL_TEXT} and eRDMA driver mode "default"`;

function describeNodes(
  list: readonly { node: NodeFacts; reason: string }[],
  total: number,
): string {
  const shown = list.slice(0, 5).map(({ node, reason }) => `${node.name} (${reason})`);
  const more = total > 5 ? `, and ${total - 5} more` : '';
  return shown.join(', ') + more;
}

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

/** The verdict once the nodes the pod may land on have been read. */
function judge(ctx: RuleContext, where: Placement, found: Candidates): RuleOutcome {
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
}

export const nodeEligibility: Rule = {
  id: 'node-eligibility',
  scope: 'smcr',
  when:
    "every node the pod may land on (by `nodeName`, `nodeSelector`, required node affinity; or the whole cluster when the node list is complete) cannot run SMC-R: the agent's `capable=false` label (no mechanism works there, [support-matrix.md](support-matrix.md)), a driver mode other than `default`, or, for nodes the agent has not labelled, not Alibaba Cloud Linux 3 or a kernel older than " +
    MIN_KERNEL_TEXT,
  fix: 'run on capable nodes',
  example: 'examples/invalid/old-kernel.yaml',
  check: (ctx) => {
    const { view, loc } = ctx;
    // Without a node list there is nothing to judge, and nothing the pod's author can change: no
    // per-object warning (#80: with --fail-on-warn it failed every clean Deployment). `check` says
    // once per run that the node checks were skipped.
    if (!view.nodesKnown) return none();
    if (placementTooLarge(loc.spec, loc.prefix)) return none(); // object-size refuses it
    const where = placement(loc.spec, loc.prefix);
    const budget = new Budget();
    if (usableMatch(view, where, budget)) return none();
    const found = budget.spent
      ? undefined
      : candidates(nodesFor(view, where), where, view.driverMode, budget);
    if (!found || found.overBudget) return tooManyComparisons(ctx, where);
    return judge(ctx, where, found);
  },
};
