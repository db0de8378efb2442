// selection: the ports a pod names for SMC (smcr.erdma.io/connect-ports, listen-ports) must parse,
// and a pod that names them is told when a node it may land on cannot keep to them (its mechanism
// turns every TCP connection of the pod into SMC: tcp2smc, IPPROTO_SMC without smc_hs_ctrl).
import { NODE_LABELS } from '../../constants.js';
import { keyPath } from '../locate.js';
import type { RuleContext } from './rule.js';
import { none, type Rule, type RuleOutcome } from './rule.js';

/** Labels of the nodes this pod may use that say they cannot enforce a selection, with counts. */
function unenforced(ctx: RuleContext): Map<string, number> {
  const out = new Map<string, number>();
  let seen = 0;
  for (const n of ctx.view.nodes.usable(ctx.view.driverMode)) {
    // Bounded: a handful of nodes tells the user as much as all of them.
    if (++seen > 1000) break;
    if (n.labels[NODE_LABELS.selection] !== 'none') continue;
    const mech = n.labels[NODE_LABELS.mechanism] ?? 'unknown';
    out.set(mech, (out.get(mech) ?? 0) + 1);
  }
  return out;
}

export const selection: Rule = {
  id: 'selection',
  scope: 'smcr',
  when: '`smcr.erdma.io/connect-ports` or `listen-ports` is not `*` or a list of ports and ranges (`6379,8000-8999,!8080`); it warns when the pod names ports and capable nodes cannot enforce them (label `smcr.erdma.io/selection=none`)',
  fix: 'write the ports as the message shows; on nodes whose mechanism is tcp2smc, every connection of the pod uses SMC whatever it names',
  example: 'examples/invalid/selection-ports.yaml',
  check: (ctx): RuleOutcome => {
    const out = none();
    for (const p of ctx.selection.problems)
      out.denials.push({
        rule: 'selection',
        path: keyPath(`${ctx.loc.prefix}metadata.annotations`, p.annotation),
        message: `${p.annotation} ${p.message}.`,
      });
    if (!ctx.selection.named || out.denials.length > 0) return out;
    for (const [mech, count] of unenforced(ctx))
      out.warnings.push(
        `${count} capable node(s) with mechanism ${mech} cannot keep this pod's SMC selection: there every TCP connection of the pod uses SMC, whatever smcr.erdma.io/connect-ports and listen-ports say (docs/policy.md#which-connections-use-smc)`,
      );
    return out;
  },
};
