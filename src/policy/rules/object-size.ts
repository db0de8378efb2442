// object-size: every review costs the webhook a bounded amount of memory and time. A pod past a
// bound is refused, never admitted unchecked: its node constraints (checked first of all), the
// label comparisons to place it (node-eligibility asks for that denial), and its annotations
// (the API server's own limit, which it checks only after the mutating webhooks).
import { SMCR_ANNOTATION } from '../../constants.js';
import { isObject } from '../../util/json.js';
import { placementTooLarge, PLACEMENT_LIMITS, type Placement } from '../scheduling.js';
import type { Denial, PodLocation } from '../types.js';
import {
  annotationPath,
  deny,
  none,
  type Rule,
  type RuleContext,
  type RuleOutcome,
} from './rule.js';

/** apimachinery's TotalAnnotationSizeLimitB: keys and values together. */
export const MAX_ANNOTATION_BYTES = 256 * 1024;

/**
 * 10000 → "10,000", without ICU: toLocaleString at load would map Node's ICU data into every
 * process that loads the policy (8.5 MiB more resident in `serve`, measured).
 */
const n = (v: number): string => String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export const objectSize: Rule = {
  id: 'object-size',
  scope: 'smcr',
  when:
    `the pod is larger than the webhook judges: more than ${n(PLACEMENT_LIMITS.terms)} required node selector terms, ` +
    `${n(PLACEMENT_LIMITS.requirements)} node requirements or ${n(PLACEMENT_LIMITS.values)} values in them, ` +
    `more than ${n(PLACEMENT_LIMITS.checks)} label comparisons against the nodes, or annotations over ${MAX_ANNOTATION_BYTES / 1024} KiB`,
  fix: `simplify the node affinity; keep annotations under ${MAX_ANNOTATION_BYTES / 1024} KiB`,
  check: (ctx) => {
    const big = placementTooLarge(ctx.loc.spec, ctx.loc.prefix);
    if (!big) return none();
    return deny(
      'object-size',
      big.path,
      `the pod's node constraints hold ${big.what}, and the webhook judges at most ${big.limit}, far more than any pod needs. ` +
        `Simplify them, or remove the ${SMCR_ANNOTATION} annotation.`,
    );
  },
};

/** The denial for a pod whose placement takes more label comparisons than the budget holds. */
export function tooManyComparisons(ctx: RuleContext, where: Placement): RuleOutcome {
  return deny(
    'object-size',
    where.pinnedBy[0] ?? annotationPath(ctx),
    `checking where this pod may run against the ${ctx.view.nodes.size} nodes of the cluster takes more than ` +
      `${PLACEMENT_LIMITS.checks} label comparisons, the most the webhook makes for one pod. Simplify ${where.pinnedBy.join(' and ')}.`,
  );
}

/** The denial for annotations the API server would refuse, before they are copied. */
export function annotationsTooLarge(loc: PodLocation): Denial | undefined {
  const raw = loc.metadata.annotations;
  if (!isObject(raw)) return undefined;
  let chars = 0;
  for (const k in raw) {
    const v = raw[k];
    chars += k.length + (typeof v === 'string' ? v.length : 0);
  }
  // A UTF-16 unit is 1 to 3 bytes of UTF-8: count bytes only when it could matter.
  if (chars * 3 <= MAX_ANNOTATION_BYTES) return undefined;
  let bytes = 0;
  for (const k in raw) {
    const v = raw[k];
    bytes += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
  }
  if (bytes <= MAX_ANNOTATION_BYTES) return undefined;
  return {
    rule: 'object-size',
    path: `${loc.prefix}metadata.annotations`,
    message: `the annotations take ${bytes} bytes, and the API server allows at most ${MAX_ANNOTATION_BYTES}: it would refuse this object. Remove annotations.`,
  };
}
