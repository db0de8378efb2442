// Which nodes a pod may land on: spec.nodeName, nodeSelector and required node affinity,
// evaluated as the scheduler does (terms ORed, expressions within a term ANDed).
// https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
import { NODE_LABELS } from '../constants.js';
import { arrayOf, isObject, stringMap } from './locate.js';
import type { JsonObject, NodeFacts } from './types.js';

export interface Placement {
  /** Whether the pod restricts where it may run at all. */
  readonly pinned: boolean;
  /** Nodes of the view the pod may land on (all nodes when not pinned). */
  readonly candidates: readonly NodeFacts[];
  /** kubectl-style description of what pins the pod, for messages. */
  readonly pinnedBy: readonly string[];
}

type Requirement = { key: string; operator: string; values: string[] };

function requirements(v: unknown): Requirement[] {
  return arrayOf(v)
    .filter(isObject)
    .map((r) => ({
      key: typeof r.key === 'string' ? r.key : '',
      operator: typeof r.operator === 'string' ? r.operator : '',
      values: arrayOf(r.values).filter((x): x is string => typeof x === 'string'),
    }));
}

function matchOne(value: string | undefined, r: Requirement): boolean {
  switch (r.operator) {
    case 'In':
      return value !== undefined && r.values.includes(value);
    case 'NotIn':
      return value === undefined || !r.values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      const a = Number.parseInt(value ?? '', 10);
      const b = Number.parseInt(r.values[0] ?? '', 10);
      if (Number.isNaN(a) || Number.isNaN(b)) return false;
      return r.operator === 'Gt' ? a > b : a < b;
    }
    default:
      return false;
  }
}

/** Our own injected requirement is not the user's choice of nodes: ignore it when judging placement. */
function isOwnRequirement(r: Requirement): boolean {
  return r.key === NODE_LABELS.capable;
}

function termMatches(term: JsonObject, node: NodeFacts): boolean {
  // An empty term matches no node (NodeSelectorTerm docs); one holding only our label matches all.
  const raw = requirements(term.matchExpressions).length + requirements(term.matchFields).length;
  if (raw === 0) return false;
  const exprs = requirements(term.matchExpressions).filter((r) => !isOwnRequirement(r));
  const fields = requirements(term.matchFields);
  return (
    exprs.every((r) => matchOne(node.labels[r.key], r)) &&
    fields.every((r) => matchOne(r.key === 'metadata.name' ? node.name : undefined, r))
  );
}

/** The required node selector terms that say something beyond our own label. */
export function userTerms(spec: JsonObject): JsonObject[] {
  const affinity = isObject(spec.affinity) ? spec.affinity : {};
  const nodeAffinity = isObject(affinity.nodeAffinity) ? affinity.nodeAffinity : {};
  const required = nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution;
  const terms = isObject(required) ? arrayOf(required.nodeSelectorTerms).filter(isObject) : [];
  const meaningful = terms.map((t) => ({
    t,
    n:
      requirements(t.matchExpressions).filter((r) => !isOwnRequirement(r)).length +
      requirements(t.matchFields).length,
  }));
  // If every term is only our own requirement, the user did not pin the pod.
  return meaningful.some((m) => m.n > 0) ? meaningful.map((m) => m.t) : [];
}

/** Computes where the pod may run among the nodes of the view. */
export function placement(spec: JsonObject, nodes: readonly NodeFacts[], prefix: string): Placement {
  const pinnedBy: string[] = [];
  const nodeName = typeof spec.nodeName === 'string' && spec.nodeName !== '' ? spec.nodeName : undefined;
  const selector = stringMap(spec.nodeSelector);
  const terms = userTerms(spec);
  if (nodeName) pinnedBy.push(`${prefix}spec.nodeName`);
  if (Object.keys(selector).length > 0) pinnedBy.push(`${prefix}spec.nodeSelector`);
  if (terms.length > 0) pinnedBy.push(`${prefix}spec.affinity.nodeAffinity`);
  const candidates = nodes.filter(
    (node) =>
      (nodeName === undefined || node.name === nodeName) &&
      Object.entries(selector).every(([k, v]) => node.labels[k] === v) &&
      (terms.length === 0 || terms.some((t) => termMatches(t, node))),
  );
  return { pinned: pinnedBy.length > 0, candidates, pinnedBy };
}
