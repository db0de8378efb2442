// Mutations of an allowed SMC-R pod, made on a clone; the patch is the diff (fast-json-patch).
// Every step is idempotent: applied to its own output it changes nothing.
import { CONTAINER_ANNOTATION, NODE_LABELS, SETTINGS_ANNOTATION } from '../constants.js';
import type { PolicyConfig } from '../config/schema.js';
import { arrayOf, isObject } from './locate.js';
import { deviceCount, resourceUses } from './rules.js';
import type { JsonObject, PodLocation } from './types.js';

function child(parent: JsonObject, key: string): JsonObject {
  const existing = parent[key];
  if (isObject(existing)) return existing;
  const created: JsonObject = {};
  parent[key] = created;
  return created;
}

/** Adds the eRDMA resource (requests = limits = 1) when no container asks for one. */
export function injectResource(pod: JsonObject, loc: PodLocation, config: PolicyConfig, annotations: Readonly<Record<string, string>>): void {
  const r = config.resourceName;
  if (resourceUses(loc, r).some((u) => (deviceCount(u.limit) ?? 0) > 0)) return;
  const containers = arrayOf(child(pod, 'spec').containers).filter(isObject);
  const named = annotations[CONTAINER_ANNOTATION];
  const targets =
    named !== undefined
      ? containers.filter((c) => c.name === named)
      : config.resourceContainer === 'all'
        ? containers
        : containers.slice(0, 1);
  for (const c of targets) {
    const res = child(c, 'resources');
    child(res, 'limits')[r] = '1';
    child(res, 'requests')[r] = '1';
  }
}

const OWN_EXPRESSION = { key: NODE_LABELS.capable, operator: 'In', values: ['true'] };

function hasOwnExpression(term: JsonObject): boolean {
  return arrayOf(term.matchExpressions).some(
    (e) => isObject(e) && e.key === OWN_EXPRESSION.key && e.operator === 'In' && arrayOf(e.values).includes('true'),
  );
}

/**
 * Requires the agent's capable label: ANDed into every existing required term (terms are ORed,
 * so each must carry it), or a new term when there is none. Empty terms match nothing and stay so.
 */
export function injectNodeAffinity(pod: JsonObject): void {
  const spec = child(pod, 'spec');
  const required = child(child(child(spec, 'affinity'), 'nodeAffinity'), 'requiredDuringSchedulingIgnoredDuringExecution');
  const terms = Array.isArray(required.nodeSelectorTerms) ? (required.nodeSelectorTerms as unknown[]) : [];
  required.nodeSelectorTerms = terms;
  if (terms.length === 0) {
    terms.push({ matchExpressions: [structuredClone(OWN_EXPRESSION)] });
    return;
  }
  for (const term of terms) {
    if (!isObject(term) || hasOwnExpression(term)) continue;
    const isEmpty = arrayOf(term.matchExpressions).length === 0 && arrayOf(term.matchFields).length === 0;
    if (isEmpty) continue;
    if (!Array.isArray(term.matchExpressions)) term.matchExpressions = [];
    (term.matchExpressions as unknown[]).push(structuredClone(OWN_EXPRESSION));
  }
}

/** Writes the webhook-owned settings annotation, overwriting anything a user put there. */
export function setSettings(pod: JsonObject, value: string): void {
  child(child(pod, 'metadata'), 'annotations')[SETTINGS_ANNOTATION] = value;
}

/** Removes the webhook-owned settings annotation (SMC-R turned off). */
export function stripSettings(pod: JsonObject): void {
  const metadata = isObject(pod.metadata) ? pod.metadata : undefined;
  const annotations = metadata && isObject(metadata.annotations) ? metadata.annotations : undefined;
  if (annotations && SETTINGS_ANNOTATION in annotations) delete annotations[SETTINGS_ANNOTATION];
}
