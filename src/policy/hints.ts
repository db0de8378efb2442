// Warnings for annotations that silently do nothing (#41): the SMC-R annotation on metadata the
// pod never gets (a workload's own, a CronJob's job template), an outer value that contradicts
// the pod template's, and keys that look like ours but are misspelled ("did you mean").
import {
  CONTAINER_ANNOTATION,
  DEVICE_CLAIM_ANNOTATION,
  OWN_PREFIX,
  SELECTION_ANNOTATIONS,
  SMCR_ANNOTATION,
  TUNING_ANNOTATIONS,
} from '../constants.js';
import { isObject } from '../util/json.js';
import { parseGoBool, smcrRequested } from './parse-bool.js';
import type { JsonObject, PodLocation } from './types.js';

/** The annotations a user writes on a pod (webhook-owned keys are not among them). */
export const USER_ANNOTATIONS: readonly string[] = [
  SMCR_ANNOTATION,
  CONTAINER_ANNOTATION,
  DEVICE_CLAIM_ANNOTATION,
  ...Object.values(TUNING_ANNOTATIONS),
  ...Object.values(SELECTION_ANNOTATIONS),
  // The opt-in to a mechanism other than the node's (preload; tcp2smc).
  `${OWN_PREFIX}mechanism`,
];
const KNOWN = new Set<string>([...USER_ANNOTATIONS, `${OWN_PREFIX}settings`]);
const SMCR_PREFIX = SMCR_ANNOTATION.slice(0, SMCR_ANNOTATION.indexOf('/') + 1);

/** Edit distance, stopping early past `max` (keys are short; this runs on few of them). */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const v = Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      row.push(v);
      best = Math.min(best, v);
    }
    if (best > max) return max + 1;
    prev = row;
  }
  return prev[b.length] ?? max + 1;
}

const fold = (k: string): string => k.toLowerCase().replace(/[_.]/g, '-');

/** The user annotation `key` was probably meant to be, if it is not one itself. */
export function meantAnnotation(key: string): string | undefined {
  if (KNOWN.has(key)) return undefined;
  const ours = key.startsWith(OWN_PREFIX);
  // Others own keys under network.alibabacloud.com/: only near-misses of ours are ours.
  if (!ours && !key.startsWith(SMCR_PREFIX) && !fold(key).endsWith('erdma-smcr')) return undefined;
  let best: { key: string; d: number } | undefined;
  for (const known of USER_ANNOTATIONS) {
    const d = distance(fold(key), fold(known), 2);
    if (d <= 2 && (!best || d < best.d)) best = { key: known, d };
  }
  return best?.key;
}

const keyList = (m: unknown): string[] => (isObject(m) ? Object.keys(m) : []);

function spelling(where: string, annotations: unknown): string[] {
  const out: string[] = [];
  for (const key of keyList(annotations)) {
    const meant = meantAnnotation(key);
    if (meant)
      out.push(
        `${where}: "${key}" is not an annotation erdma-smcr reads; did you mean "${meant}"?`,
      );
  }
  return out;
}

/**
 * Our per-pod keys (ports, tuning, container, device claim, mechanism) on metadata the pod never
 * gets, and not on the pod template: the pod runs without them, in silence (#102: connect-ports on
 * a Deployment's own metadata gave the pod every port).
 */
function misplaced(where: string, outer: unknown, inner: unknown, target: string): string[] {
  const pod = isObject(inner) ? inner : {};
  return keyList(outer)
    .filter((k) => k !== SMCR_ANNOTATION && USER_ANNOTATIONS.includes(k) && !(k in pod))
    .map((k) => `${k} on ${where} does nothing; put it on ${target}`);
}

function annotationAt(root: JsonObject, keys: readonly string[]): string | undefined {
  let node: unknown = root;
  for (const k of keys) node = isObject(node) ? node[k] : undefined;
  return smcrRequested(node)?.raw;
}

/** Metadata above the pod template that the pod never gets, outermost first. */
function outerMetadata(loc: PodLocation): { path: string; keys: string[] }[] {
  if (loc.isPod) return [];
  const out = [{ path: `the ${loc.kind}'s own metadata`, keys: ['metadata', 'annotations'] }];
  if (loc.prefix.startsWith('spec.jobTemplate.'))
    out.push({
      path: 'spec.jobTemplate.metadata',
      keys: ['spec', 'jobTemplate', 'metadata', 'annotations'],
    });
  return out;
}

/**
 * Warnings for the annotation where it does nothing, or contradicts the pod template's, and for
 * misspelled keys on the pod and on the metadata above it.
 */
export function annotationHints(obj: JsonObject, loc: PodLocation): string[] {
  const inTemplate = smcrRequested(loc.metadata.annotations);
  const podValue = inTemplate?.raw;
  const target = `${loc.prefix}metadata.annotations`;
  const out: string[] = [];
  for (const { path, keys } of outerMetadata(loc)) {
    const outer = annotationAt(obj, keys);
    if (outer !== undefined && podValue === undefined)
      out.push(`${SMCR_ANNOTATION} on ${path} does nothing; put it on ${target}`);
    else if (outer !== undefined && podValue !== undefined && parseGoBool(outer) !== inTemplate?.on)
      out.push(
        `${SMCR_ANNOTATION} is "${outer}" on ${path} but "${podValue}" on ${target}: the pod gets "${podValue}"`,
      );
    let node: unknown = obj;
    for (const k of keys) node = isObject(node) ? node[k] : undefined;
    out.push(...misplaced(path, node, loc.metadata.annotations, target));
    out.push(...spelling(path, node));
  }
  out.push(...spelling(target, loc.metadata.annotations));
  if (
    isObject(loc.metadata.labels) &&
    SMCR_ANNOTATION in loc.metadata.labels &&
    podValue === undefined
  )
    out.push(
      `${SMCR_ANNOTATION} is a label on ${loc.prefix}metadata.labels, which erdma-smcr does not read: put it on ${target}`,
    );
  return out;
}
