// tuning: the tuning annotations must hold values the kernel accepts. Judged when a pod is
// created, and again for the annotations an UPDATE changes.
import { keyPath } from '../locate.js';
import type { TuningProblem } from '../settings.js';
import type { Denial } from '../types.js';
import type { Rule } from './rule.js';

export const tuning: Rule = {
  id: 'tuning',
  scope: 'smcr',
  when: "a tuning annotation is outside the kernel's range",
  fix: 'the message gives the range',
  example: 'examples/invalid/tuning-range.yaml',
  check: (ctx) => ({
    denials: ctx.tuning.problems.map((p) => tuningDenial(ctx.loc.prefix, p)),
    warnings: [...ctx.tuning.warnings],
  }),
};

/** The denial for one annotation the kernel would not accept; `prefix` is the pod's (kubectl style). */
export function tuningDenial(prefix: string, p: TuningProblem): Denial {
  return {
    rule: 'tuning',
    path: keyPath(`${prefix}metadata.annotations`, p.annotation),
    message: `${p.annotation} ${p.message}.`,
  };
}
