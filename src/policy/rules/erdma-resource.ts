// erdma-resource: aliyun/erdma requests must equal limits, and setting it to 0 everywhere
// contradicts asking for SMC-R.
import { deviceCount, resourceUses, type ResourceUse } from '../devices.js';
import { keyPath } from '../locate.js';
import type { Denial } from '../types.js';
import { deny, none, type Rule } from './rule.js';

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

export const erdmaResource: Rule = {
  id: 'erdma-resource',
  scope: 'smcr',
  when: '`aliyun/erdma` requested without a limit, requests ≠ limits, not a whole number (read as a Kubernetes quantity: `"1000m"` is 1), or 0 everywhere',
  fix: 'remove the entries (one is injected) or set them to 1',
  example: 'examples/invalid/erdma-zero.yaml',
  check: (ctx) => {
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
  },
};
