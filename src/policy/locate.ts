// Finds the pod (metadata and spec) inside a Pod or a workload's pod template.
import type { JsonObject, PodLocation, StringMap } from './types.js';

/** Workload kinds whose pod template sits at spec.template. */
const TEMPLATE_KINDS = new Set([
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  'ReplicaSet',
  'ReplicationController',
  'Job',
  'PodTemplate',
]);

export const SUPPORTED_KINDS: readonly string[] = ['Pod', ...TEMPLATE_KINDS, 'CronJob'];

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function objAt(root: JsonObject, keys: readonly string[]): JsonObject | undefined {
  let node: unknown = root;
  for (const k of keys) {
    if (!isObject(node)) return undefined;
    node = node[k];
  }
  return isObject(node) ? node : undefined;
}

/** Where kinds we do not know (an Argo Rollout, an OpenKruise CloneSet...) keep a pod template, if they do. */
const WELL_KNOWN_TEMPLATES: readonly (readonly string[])[] = [
  ['spec', 'template'],
  ['spec', 'jobTemplate', 'spec', 'template'],
];

/** True when `keys` leads to a pod template: an object whose spec has a containers list. */
function holdsPodTemplate(obj: JsonObject, keys: readonly string[]): boolean {
  return Array.isArray(objAt(obj, [...keys, 'spec'])?.containers);
}

function templateKeys(kind: string, obj: JsonObject): readonly string[] | undefined {
  if (kind === 'Pod') return [];
  if (kind === 'CronJob') return ['spec', 'jobTemplate', 'spec', 'template'];
  if (kind === 'PodTemplate') return ['template'];
  if (TEMPLATE_KINDS.has(kind)) return ['spec', 'template'];
  if (kind === '' || kind.endsWith('List')) return undefined;
  return WELL_KNOWN_TEMPLATES.find((keys) => holdsPodTemplate(obj, keys));
}

/**
 * Locates the pod in `obj`. Returns undefined for kinds that carry no pod. A missing
 * metadata or spec is represented by an empty object so rules can read safely.
 */
export function locatePod(obj: JsonObject): PodLocation | undefined {
  const kind = typeof obj.kind === 'string' ? obj.kind : '';
  const keys = templateKeys(kind, obj);
  if (!keys) return undefined;
  const template = keys.length === 0 ? obj : objAt(obj, keys);
  const prefix = keys.length === 0 ? '' : `${keys.join('.')}.`;
  const pointer = keys.length === 0 ? '' : `/${keys.join('/')}`;
  return {
    kind,
    metadata: (template && objAt(template, ['metadata'])) ?? {},
    spec: (template && objAt(template, ['spec'])) ?? {},
    prefix,
    pointer,
    isPod: kind === 'Pod',
  };
}

/**
 * Reads a string-valued map (annotations, labels, nodeSelector) defensively, into an object with
 * no prototype: looking up a key a user wrote (`toString`, `constructor`) finds only what the
 * map holds, never a built-in.
 */
export function stringMap(v: unknown): StringMap {
  const out = Object.create(null) as Record<string, string>;
  if (!isObject(v)) return out;
  for (const k of Object.keys(v)) {
    const val = v[k];
    if (typeof val === 'string') out[k] = val;
  }
  return out;
}

/** `map[key]` when the map itself holds the key: never a value inherited from a prototype. */
export function ownValue(map: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}

export function arrayOf(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** kubectl-style path segment for a map key: `annotations[network.alibabacloud.com/erdma-smcr]`. */
export function keyPath(base: string, key: string): string {
  return `${base}[${key}]`;
}
