// Mutations of an allowed SMC-R pod, made on a copy; the patch is what the copy changed (patch.ts).
// Every step is idempotent: applied to its own output it changes nothing.
// Copy-on-descend: `child` replaces each object it descends into with a shallow copy, so the
// input is never changed and untouched subtrees stay shared (the diff skips them cheaply). The
// affinity of a pod that had none is added whole: a frozen constant shared by every copy, whose
// JSON is computed once (patch.ts's sharedConstant).
import {
  CONTAINER_ANNOTATION,
  DEVICE_CLAIM_ANNOTATION,
  NODE_LABELS,
  SETTINGS_ANNOTATION,
} from '../constants.js';
import type { PolicyConfig } from '../config/schema.js';
import { arrayOf, isObject } from '../util/json.js';
import { sharedConstant } from './patch.js';
import { deviceCount, resourceUses } from './devices.js';
import type { JsonObject, PodLocation } from './types.js';

/** Returns a fresh copy of parent[key] (created when absent) stored back into the fresh parent. */
export function child(parent: JsonObject, key: string): JsonObject {
  const existing = parent[key];
  const copy: JsonObject = isObject(existing) ? { ...existing } : {};
  parent[key] = copy;
  return copy;
}

/** Returns a fresh copy of the array at parent[key] (empty when absent), stored back. */
function childArray(parent: JsonObject, key: string): unknown[] {
  const existing = parent[key];
  const copy = Array.isArray(existing) ? [...(existing as unknown[])] : [];
  parent[key] = copy;
  return copy;
}

/** Adds the eRDMA resource (requests = limits = 1) when no container asks for one. */
export function injectResource(
  pod: JsonObject,
  loc: PodLocation,
  config: PolicyConfig,
  annotations: Readonly<Record<string, string>>,
): void {
  const r = config.resourceName;
  if (resourceUses(loc, r).some((u) => (deviceCount(u.limit) ?? 0) > 0)) return;
  // The device comes from a ResourceClaim through DRA (the device-claim rule checks the name).
  if (annotations[DEVICE_CLAIM_ANNOTATION] !== undefined) return;
  const named = annotations[CONTAINER_ANNOTATION];
  if (named !== undefined && injectIntoSidecar(pod, loc, named, r)) return;
  const containers = childArray(child(pod, 'spec'), 'containers');
  let first = true;
  containers.forEach((c, i) => {
    if (!isObject(c)) return;
    const wanted =
      named !== undefined ? c.name === named : config.resourceContainer === 'all' || first;
    first = false;
    if (!wanted) return;
    const copy = { ...c };
    containers[i] = copy;
    const res = child(copy, 'resources');
    child(res, 'limits')[r] = '1';
    child(res, 'requests')[r] = '1';
  });
}

/**
 * The device for the native sidecar (init container with restartPolicy: Always) the annotation
 * names; false when it names none (then it names a container, or the container rule denies it).
 */
function injectIntoSidecar(pod: JsonObject, loc: PodLocation, named: string, r: string): boolean {
  const sidecar = (c: unknown): boolean =>
    isObject(c) && c.name === named && c.restartPolicy === 'Always';
  if (!arrayOf(loc.spec.initContainers).some(sidecar)) return false;
  const inits = childArray(child(pod, 'spec'), 'initContainers');
  const i = inits.findIndex(sidecar);
  if (i < 0) return false;
  const copy = { ...(inits[i] as JsonObject) };
  inits[i] = copy;
  const res = child(copy, 'resources');
  child(res, 'limits')[r] = '1';
  child(res, 'requests')[r] = '1';
  return true;
}

const OWN_EXPRESSION: JsonObject = {
  key: NODE_LABELS.capable,
  operator: 'In',
  values: ['true'],
};
const ownExpression = (): JsonObject => ({
  key: OWN_EXPRESSION.key,
  operator: 'In',
  values: ['true'],
});
/** A pod's affinity when it had none, the usual case: one frozen object every copy shares. */
const OWN_AFFINITY = sharedConstant({
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [ownExpression()] }],
    },
  },
});

function hasExpression(term: JsonObject, want: JsonObject): boolean {
  const values = arrayOf(want.values);
  return arrayOf(term.matchExpressions).some(
    (e) =>
      isObject(e) &&
      e.key === want.key &&
      e.operator === want.operator &&
      values.every((v) => arrayOf(e.values).includes(v)),
  );
}

/**
 * Requires the agent's capable label (and `extra`, the mechanism requirement, when given): ANDed
 * into every existing required term (terms are ORed, so each must carry it), or a new term when
 * there is none. Empty terms match nothing and stay so.
 */
export function injectNodeAffinity(pod: JsonObject, extra?: JsonObject): void {
  const spec = child(pod, 'spec');
  const wanted = extra ? [OWN_EXPRESSION, extra] : [OWN_EXPRESSION];
  if (!isObject(spec.affinity) && !extra) {
    spec.affinity = OWN_AFFINITY;
    return;
  }
  const required = child(
    child(child(spec, 'affinity'), 'nodeAffinity'),
    'requiredDuringSchedulingIgnoredDuringExecution',
  );
  const terms = childArray(required, 'nodeSelectorTerms');
  if (terms.length === 0) {
    terms.push({ matchExpressions: wanted.map((e) => ({ ...e, values: [...arrayOf(e.values)] })) });
    return;
  }
  terms.forEach((term, i) => {
    if (!isObject(term)) return;
    const missing = wanted.filter((e) => !hasExpression(term, e));
    const isEmpty =
      arrayOf(term.matchExpressions).length === 0 && arrayOf(term.matchFields).length === 0;
    if (missing.length === 0 || isEmpty) return;
    const copy = { ...term };
    terms[i] = copy;
    childArray(copy, 'matchExpressions').push(
      ...missing.map((e) => ({ ...e, values: [...arrayOf(e.values)] })),
    );
  });
}

/** Writes the webhook-owned settings annotation, overwriting anything a user put there. */
export function setSettings(pod: JsonObject, value: string): void {
  child(child(pod, 'metadata'), 'annotations')[SETTINGS_ANNOTATION] = value;
}

/** Removes the webhook-owned settings annotation (SMC-R turned off). */
export function stripSettings(pod: JsonObject): void {
  delete child(child(pod, 'metadata'), 'annotations')[SETTINGS_ANNOTATION];
}
