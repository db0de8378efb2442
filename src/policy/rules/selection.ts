// selection: the ports a pod names for SMC (smcr.erdma.io/connect-ports, listen-ports) must parse,
// and every SMC-R pod is told when a node it may land on cannot keep its selection (its mechanism
// turns every TCP connection of the pod into SMC: tcp2smc, IPPROTO_SMC without smc_hs_ctrl), ports
// named or not: the default selection keeps the cluster's networks too, which those nodes do not.
import { NODE_LABELS } from '../../constants.js';
import { keyPath } from '../locate.js';
import { Budget, placement, placementTooLarge } from '../scheduling.js';
import type { RuleContext } from './rule.js';
import { none, type Rule, type RuleOutcome } from './rule.js';

/**
 * The nodes this pod may land on (its nodeName, nodeSelector and required affinity, as the
 * scheduler reads them) that say they cannot enforce a selection, by mechanism, with counts.
 */
function unenforced(ctx: RuleContext): Map<string, number> {
  const out = new Map<string, number>();
  const { view, loc } = ctx;
  if (placementTooLarge(loc.spec, loc.prefix)) return out;
  const where = placement(loc.spec, loc.prefix);
  const budget = new Budget();
  const pinned = where.nodeName === undefined ? undefined : view.nodes.get(where.nodeName);
  const nodes =
    where.nodeName === undefined ? view.nodes.usable(view.driverMode) : pinned ? [pinned] : [];
  let seen = 0;
  for (const n of nodes) {
    // Bounded: a handful of nodes tells the user as much as all of them.
    if (++seen > 1000 || budget.spent) break;
    if (n.labels[NODE_LABELS.selection] !== 'none' || !where.matches(n, budget)) continue;
    const mech = n.labels[NODE_LABELS.mechanism] ?? 'unknown';
    out.set(mech, (out.get(mech) ?? 0) + 1);
  }
  return out;
}

export const selection: Rule = {
  id: 'selection',
  scope: 'smcr',
  when: '`smcr.erdma.io/connect-ports` or `listen-ports` is not `*` or a list of ports and ranges (`6379,8000-8999,!8080`); it warns when capable nodes the pod may land on cannot enforce its selection (label `smcr.erdma.io/selection=none`), ports named or not',
  fix: 'write the ports as the message shows; on nodes whose mechanism is tcp2smc, every connection of the pod uses SMC, its Internet ones too: keep the pod to nodes that enforce it (label `smcr.erdma.io/selection=enforced`)',
  example: 'examples/invalid/selection-ports.yaml',
  check: (ctx): RuleOutcome => {
    const out = none();
    for (const p of ctx.selection.problems)
      out.denials.push({
        rule: 'selection',
        path: keyPath(`${ctx.loc.prefix}metadata.annotations`, p.annotation),
        message: `${p.annotation} ${p.message}.`,
      });
    if (out.denials.length > 0) return out;
    const what = ctx.selection.named
      ? 'whatever smcr.erdma.io/connect-ports and listen-ports say'
      : "those outside the cluster's networks too (Internet servers, cloud services), which the default selection keeps on TCP";
    for (const [mech, count] of unenforced(ctx))
      out.warnings.push(
        `${count} capable node(s) this pod may land on, with mechanism ${mech}, cannot keep its SMC selection: there every TCP connection of the pod uses SMC, ${what}. To keep it, require nodes labelled smcr.erdma.io/selection=enforced (docs/policy.md#which-connections-use-smc)`,
      );
    return out;
  },
};
