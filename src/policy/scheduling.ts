// Which nodes a pod may land on: spec.nodeName, nodeSelector and required node affinity,
// evaluated as the scheduler does (terms ORed, expressions within a term ANDed).
// https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
//
// A pod's constraints are read once into a compiled form (value lists become sets), and matching
// a node costs at most one lookup per requirement. What a review may cost is bounded twice: the
// constraints' size (PLACEMENT_LIMITS: no real pod comes near them, and past them the pod is
// refused with the reason, see rules.ts) and the label comparisons one review may make against
// the nodes of the view (`checks`), so that no review holds the event loop for long whatever the
// size of the pod or of the cluster.
import { NODE_LABELS } from '../constants.js';
import { arrayOf, isObject, ownValue } from '../util/json.js';
import type { JsonObject, NodeFacts } from './types.js';

/** The most a pod's node constraints may hold for the webhook to judge them. */
export const PLACEMENT_LIMITS = {
  /** Required nodeSelectorTerms (ORed by the scheduler). */
  terms: 100,
  /** Requirements in all terms plus nodeSelector entries. */
  requirements: 1_000,
  /** Values in all requirements. */
  values: 10_000,
  /** Label comparisons against the view's nodes in one review. */
  checks: 2_000_000,
} as const;

type Operator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt' | 'invalid';

interface Requirement {
  readonly key: string;
  readonly operator: Operator;
  readonly values: ReadonlySet<string>;
  /** Gt/Lt: the first value as the scheduler reads it (NaN when it is not a number). */
  readonly bound: number;
}

interface Term {
  /** Expressions other than our own capable requirement, and fields. */
  readonly exprs: readonly Requirement[];
  readonly fields: readonly Requirement[];
  /** A term with no requirement at all matches no node (NodeSelectorTerm docs). */
  readonly empty: boolean;
}

/** Where a pod may run, compiled. */
export interface Placement {
  /** Whether the pod restricts where it may run at all. */
  readonly pinned: boolean;
  /** kubectl-style description of what pins the pod, for messages. */
  readonly pinnedBy: readonly string[];
  /** spec.nodeName, when set. */
  readonly nodeName?: string;
  /** Whether the pod may run on `node`; counts its label comparisons against `budget`. */
  matches(node: NodeFacts, budget: Budget): boolean;
}

/** What a pod's constraints exceed, for the denial: the field and what it holds. */
export interface PlacementTooLarge {
  readonly path: string;
  readonly what: string;
  readonly limit: number;
}

/** Label comparisons left in one review. */
export class Budget {
  constructor(public left: number = PLACEMENT_LIMITS.checks) {}
  get spent(): boolean {
    return this.left <= 0;
  }
}

const OPERATORS: ReadonlySet<string> = new Set([
  'In',
  'NotIn',
  'Exists',
  'DoesNotExist',
  'Gt',
  'Lt',
]);

function compileRequirement(r: JsonObject): Requirement {
  const values = arrayOf(r.values).filter((x): x is string => typeof x === 'string');
  const operator =
    typeof r.operator === 'string' && OPERATORS.has(r.operator)
      ? (r.operator as Operator)
      : 'invalid';
  return {
    key: typeof r.key === 'string' ? r.key : '',
    operator,
    values: new Set(values),
    bound: Number.parseInt(values[0] ?? '', 10),
  };
}

function matchOne(value: string | undefined, r: Requirement): boolean {
  switch (r.operator) {
    case 'In':
      return value !== undefined && r.values.has(value);
    case 'NotIn':
      return value === undefined || !r.values.has(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      const a = Number.parseInt(value ?? '', 10);
      if (Number.isNaN(a) || Number.isNaN(r.bound)) return false;
      return r.operator === 'Gt' ? a > r.bound : a < r.bound;
    }
    default:
      return false;
  }
}

/** Our own injected requirement is not the user's choice of nodes: ignore it when judging placement. */
function isOwnRequirement(r: Requirement): boolean {
  return r.key === NODE_LABELS.capable;
}

function requiredTerms(spec: JsonObject): unknown[] {
  const affinity = isObject(spec.affinity) ? spec.affinity : {};
  const nodeAffinity = isObject(affinity.nodeAffinity) ? affinity.nodeAffinity : {};
  const required = nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution;
  return isObject(required) ? arrayOf(required.nodeSelectorTerms) : [];
}

const TERMS_PATH =
  'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms';

/** Counts what the pod's node constraints hold; the first limit they exceed, if any. */
export function placementTooLarge(spec: JsonObject, prefix: string): PlacementTooLarge | undefined {
  const terms = requiredTerms(spec);
  if (terms.length > PLACEMENT_LIMITS.terms) {
    return {
      path: `${prefix}${TERMS_PATH}`,
      what: `${terms.length} terms`,
      limit: PLACEMENT_LIMITS.terms,
    };
  }
  let requirements = isObject(spec.nodeSelector) ? Object.keys(spec.nodeSelector).length : 0;
  let values = 0;
  for (const t of terms) {
    if (!isObject(t)) continue;
    for (const list of [t.matchExpressions, t.matchFields]) {
      const reqs = arrayOf(list);
      requirements += reqs.length;
      for (const r of reqs) values += isObject(r) ? arrayOf(r.values).length : 0;
    }
  }
  const path = `${prefix}spec.affinity.nodeAffinity`;
  if (requirements > PLACEMENT_LIMITS.requirements) {
    return {
      path,
      what: `${requirements} requirements (nodeSelector entries, match expressions and fields)`,
      limit: PLACEMENT_LIMITS.requirements,
    };
  }
  if (values > PLACEMENT_LIMITS.values) {
    return { path, what: `${values} values in its requirements`, limit: PLACEMENT_LIMITS.values };
  }
  return undefined;
}

function compileTerm(term: JsonObject): Term {
  const exprs = arrayOf(term.matchExpressions).filter(isObject).map(compileRequirement);
  const fields = arrayOf(term.matchFields).filter(isObject).map(compileRequirement);
  return {
    exprs: exprs.filter((r) => !isOwnRequirement(r)),
    fields,
    empty: exprs.length + fields.length === 0,
  };
}

/** The required node selector terms that say something beyond our own label ([] when none does). */
function userTerms(spec: JsonObject): Term[] {
  const terms = requiredTerms(spec).filter(isObject).map(compileTerm);
  // If every term is only our own requirement (or empty), the user did not pin the pod.
  return terms.some((t) => t.exprs.length + t.fields.length > 0) ? terms : [];
}

function termMatches(term: Term, node: NodeFacts, budget: Budget): boolean {
  if (term.empty) return false;
  for (const r of term.exprs) {
    budget.left -= 1;
    if (!matchOne(ownValue(node.labels, r.key), r)) return false;
  }
  for (const r of term.fields) {
    budget.left -= 1;
    if (!matchOne(r.key === 'metadata.name' ? node.name : undefined, r)) return false;
  }
  return true;
}

/** Compiles where the pod may run. Call placementTooLarge first: this reads every requirement. */
export function placement(spec: JsonObject, prefix: string): Placement {
  const pinnedBy: string[] = [];
  const nodeName =
    typeof spec.nodeName === 'string' && spec.nodeName !== '' ? spec.nodeName : undefined;
  const selector = isObject(spec.nodeSelector)
    ? Object.entries(spec.nodeSelector).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      )
    : [];
  const terms = userTerms(spec);
  if (nodeName) pinnedBy.push(`${prefix}spec.nodeName`);
  if (selector.length > 0) pinnedBy.push(`${prefix}spec.nodeSelector`);
  if (terms.length > 0) pinnedBy.push(`${prefix}spec.affinity.nodeAffinity`);
  const matches = (node: NodeFacts, budget: Budget): boolean => {
    if (nodeName !== undefined && node.name !== nodeName) return false;
    for (const [k, v] of selector) {
      budget.left -= 1;
      if (ownValue(node.labels, k) !== v) return false;
    }
    return terms.length === 0 || terms.some((t) => termMatches(t, node, budget));
  };
  return { pinned: pinnedBy.length > 0, pinnedBy, ...(nodeName ? { nodeName } : {}), matches };
}
