// device-claim: smcr.erdma.io/device-claim names the pod's ResourceClaim that gives it its eRDMA
// device through DRA (a claim for the DeviceClass erdma.smcr.erdma.io), so that the webhook adds no
// aliyun/erdma beside it (#86 item 5). The name must be one of spec.resourceClaims, and a
// container must use it. Which class the claim asks for is in its ResourceClaim or template, not
// in the pod: a pod whose containers use claims but names none gets a warning, since it may then
// hold two devices (its claim's and the aliyun/erdma the webhook adds).
import { DEVICE_CLAIM_ANNOTATION } from '../../constants.js';
import { arrayOf, isObject } from '../../util/json.js';
import { clip } from '../../util/text.js';
import { annotationPath, deny, none, type Rule } from './rule.js';

/** The claim names the pod's containers (and native sidecars) use. */
function usedClaims(spec: Readonly<Record<string, unknown>>): Set<string> {
  const used = new Set<string>();
  for (const kind of ['containers', 'initContainers'])
    for (const c of arrayOf(spec[kind])) {
      if (!isObject(c) || !isObject(c.resources)) continue;
      for (const claim of arrayOf(c.resources.claims))
        if (isObject(claim) && typeof claim.name === 'string') used.add(claim.name);
    }
  return used;
}

export const deviceClaim: Rule = {
  id: 'device-claim',
  scope: 'smcr',
  when: '`smcr.erdma.io/device-claim` names no entry of `spec.resourceClaims`, or one no container uses; it warns when containers use claims and the annotation names none (the pod may get a second device)',
  fix: 'name the pod claim of the DeviceClass `erdma.smcr.erdma.io`',
  example: 'examples/invalid/device-claim-missing.yaml',
  check: (ctx) => {
    const named = ctx.annotations[DEVICE_CLAIM_ANNOTATION];
    const declared = arrayOf(ctx.loc.spec.resourceClaims)
      .map((c) => (isObject(c) && typeof c.name === 'string' ? c.name : undefined))
      .filter((n): n is string => n !== undefined);
    const used = usedClaims(ctx.loc.spec);
    if (named === undefined) {
      if (used.size === 0) return none();
      const out = none();
      out.warnings.push(
        `the pod's containers use ResourceClaims (${clip([...used].join(', '), 253)}) and ${DEVICE_CLAIM_ANNOTATION} names none: if one of them is for the DeviceClass erdma.smcr.erdma.io, name it there, or the pod also gets the aliyun/erdma the webhook adds (a second device)`,
      );
      return out;
    }
    if (!declared.includes(named))
      return deny(
        'device-claim',
        annotationPath(ctx, DEVICE_CLAIM_ANNOTATION),
        `${DEVICE_CLAIM_ANNOTATION} names claim "${clip(named, 64)}", which spec.resourceClaims does not have (${clip(declared.join(', '), 253) || 'none'}).`,
      );
    if (!used.has(named))
      return deny(
        'device-claim',
        annotationPath(ctx, DEVICE_CLAIM_ANNOTATION),
        `${DEVICE_CLAIM_ANNOTATION} names claim "${clip(named, 64)}", which no container uses: add it to the SMC-R container's resources.claims.`,
      );
    return none();
  },
};
