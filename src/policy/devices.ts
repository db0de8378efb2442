// Device resources in a pod: where its containers ask for one, and how many they ask for.
import { arrayOf, isObject } from '../util/json.js';
import { wholeQuantity } from './quantity.js';
import type { PodLocation } from './types.js';

export interface ResourceUse {
  readonly path: string;
  readonly request?: unknown;
  readonly limit?: unknown;
}

/** Every container (init containers first) that names `resource` in its requests or limits. */
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

const MAX_COUNT = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Count of a device resource: a quantity (Kubernetes' rules: `"1k"` is 1000, `"1000m"` is 1) whose
 * value is a whole non-negative number, as a string or a number; undefined for anything else.
 */
export function deviceCount(v: unknown): number | undefined {
  const n = wholeQuantity(v);
  if (n === undefined || n < 0n) return undefined;
  return n > MAX_COUNT ? Number.MAX_SAFE_INTEGER : Number(n);
}
