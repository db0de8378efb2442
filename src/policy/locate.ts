// Finds the pod (metadata and spec) inside a Pod or a workload's pod template.
import { isObject } from '../util/json.js';
import type { JsonObject, PodLocation } from './types.js';

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

/** kubectl-style path segment for a map key: `annotations[network.alibabacloud.com/erdma-smcr]`. */
export function keyPath(base: string, key: string): string {
  return `${base}[${key}]`;
}
