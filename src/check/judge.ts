// `check` judging one object: the policy's verdict on it, as the webhook would give it, with what
// check itself notes of an input (CHECK_NOTE) and, when asked, the pod as admitted.
import type { PolicyConfig } from '../config/schema.js';
import { evaluate } from '../policy/evaluate.js';
import { locatePod } from '../policy/locate.js';
import { mayUseRdma } from '../policy/rdma.js';
import { isObject } from '../util/json.js';
import { EXCLUDED_NAMESPACES, SMCR_ANNOTATION } from '../constants.js';
import type {
  ClusterView,
  Denial,
  JsonObject,
  PatchOperation,
  PolicyResult,
  Warning,
} from '../policy/types.js';
import type { SourcedObject } from './inputs.js';

export interface CheckResult {
  readonly source: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** The object's pod carries the SMC-R annotation (on the pod or the pod template itself). */
  readonly annotated: boolean;
  /**
   * The policy judged the object: its pod carries the annotation or asks for an RDMA device. An
   * allowed object it did not judge is a SKIP, whatever hints it got (a misspelt key, the
   * annotation on the wrong metadata): SMC-R never applies to it.
   */
  readonly judged: boolean;
  readonly allowed: boolean;
  readonly denials: readonly Denial[];
  /** Each under its rule's id; `check-note` for what check itself notes of an input (CHECK_NOTE). */
  readonly warnings: readonly Warning[];
  readonly patch: readonly PatchOperation[];
  /** The pod as the webhook admits it, kept only for `--show-mutated` / `--show-patch`. */
  readonly preview?: PodPreview;
  /**
   * Allowed: the object as the API server would store it (a Pod as the webhook mutates it, any
   * other object as written), kept only for `-o yaml`.
   */
  readonly admitted?: JsonObject;
}

/**
 * An allowed object's pod after the webhook's patch. For a workload, the webhook mutates each pod
 * its controller creates, not the template: the preview is such a pod (the template's metadata
 * and spec, named by generateName), judged as the webhook judges it.
 */
export interface PodPreview {
  readonly fromTemplate: boolean;
  readonly patch: readonly PatchOperation[];
  readonly pod: JsonObject;
}

/** What to keep of each result beyond its verdict: memory stays flat in the size of the tree otherwise. */
export interface Keep {
  /** The JSON Patch of each Pod (JSON output, --show-patch). */
  readonly patch: boolean;
  /** The admitted pod and its patch, templates included (--show-mutated, --show-patch). */
  readonly preview?: boolean;
  /** Each allowed object as the API server would store it (-o yaml). */
  readonly admitted?: boolean;
  /** Warnings of these rules are dropped, from every output and the count (--skip-warning). */
  readonly skipWarnings?: ReadonlySet<string>;
}

function describe(obj: Record<string, unknown>): {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
} {
  const md = isObject(obj.metadata) ? obj.metadata : {};
  const name =
    typeof md.name === 'string'
      ? md.name
      : typeof md.generateName === 'string'
        ? `${md.generateName}*`
        : '(unnamed)';
  return {
    apiVersion: typeof obj.apiVersion === 'string' ? obj.apiVersion : '',
    kind: typeof obj.kind === 'string' ? obj.kind : '(no kind)',
    namespace: typeof md.namespace === 'string' ? md.namespace : '',
    name,
  };
}

/** Where the SMC-R annotation sits in an object we cannot read a pod from (bounded walk), if anywhere. */
function strayAnnotation(v: unknown, path: string, depth = 0): string | undefined {
  if (depth > 12 || v === null || typeof v !== 'object') return undefined;
  for (const [k, child] of Object.entries(v)) {
    if (k === 'annotations' && isObject(child) && SMCR_ANNOTATION in child)
      return `${path}.annotations`;
    const found = strayAnnotation(
      child,
      Array.isArray(v) ? `${path}[${k}]` : `${path}.${k}`,
      depth + 1,
    );
    if (found) return found;
  }
  return undefined;
}

/**
 * API groups of Kubernetes itself whose kinds never hold a pod template that erdma-smcr does not
 * read already (the workloads and Pod are located above; v1 PodTemplate and ReplicationController
 * are not in the list of kinds below). kustomize's commonAnnotations puts the SMC-R annotation on
 * every object, Services and ConfigMaps too: on their own metadata it does nothing and harms nothing,
 * so it is not a note (#102: it made `check --fail-on-warn` exit 3 because of a Service).
 */
const BUILTIN_GROUPS = new Set([
  '',
  'networking.k8s.io',
  'rbac.authorization.k8s.io',
  'policy',
  'autoscaling',
  'storage.k8s.io',
  'scheduling.k8s.io',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'coordination.k8s.io',
  'discovery.k8s.io',
  'certificates.k8s.io',
  'node.k8s.io',
  'resource.k8s.io',
]);
const POD_HOLDING_CORE = new Set(['PodTemplate', 'ReplicationController']);

function harmlessOnMetadata(object: Record<string, unknown>, at: string): boolean {
  if (at !== '.metadata.annotations' || typeof object.apiVersion !== 'string') return false;
  const slash = object.apiVersion.indexOf('/');
  const group = slash < 0 ? '' : object.apiVersion.slice(0, slash);
  return BUILTIN_GROUPS.has(group) && !POD_HOLDING_CORE.has(String(object.kind));
}

function strayWarning(object: Record<string, unknown>): string[] {
  if (locatePod(object)) return [];
  const at = strayAnnotation(object, '');
  return at && !harmlessOnMetadata(object, at)
    ? [
        `${SMCR_ANNOTATION} is set at ${at.slice(1)}, where erdma-smcr cannot tell whether a pod template sits: not checked`,
      ]
    : [];
}

/** A pod as a workload's controller creates it from the template (what the webhook then sees). */
function podFromTemplate(object: JsonObject): JsonObject | undefined {
  const loc = locatePod(object);
  if (!loc || loc.isPod) return undefined;
  const md = isObject(object.metadata) ? object.metadata : {};
  const metadata: JsonObject = { ...loc.metadata };
  if (typeof md.name === 'string') metadata.generateName = `${md.name}-`;
  if (typeof md.namespace === 'string') metadata.namespace = md.namespace;
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: loc.spec };
}

function previewOf(
  object: JsonObject,
  r: PolicyResult,
  view: ClusterView,
  config: PolicyConfig,
): PodPreview | undefined {
  if (!r.allowed || r.untouched) return undefined;
  if (r.mutated) return { fromTemplate: false, patch: r.patch, pod: r.mutated };
  const pod = podFromTemplate(object);
  if (!pod) return undefined;
  const admitted = evaluate(pod, view, config);
  return admitted.allowed && admitted.mutated
    ? { fromTemplate: true, patch: admitted.patch, pod: admitted.mutated }
    : undefined;
}

/** One object's result; its patch and preview are kept only when the output shows them. */
/** An AdmissionReview saved from an API server: what is checked is the object it reviews. */
/**
 * The id of what check notes of an input that no admission rule raised: an AdmissionReview read
 * for its object, a namespace the webhook never sees, an annotation where no pod template can be
 * told. docs/check.md lists it beside the rules.
 */
export const CHECK_NOTE = 'check-note';
const noted = (messages: readonly string[]): Warning[] =>
  messages.map((message) => ({ rule: CHECK_NOTE, message }));

function reviewed(object: JsonObject): { object: JsonObject; note: string[] } {
  const request = isObject(object.request) ? object.request : undefined;
  if (object.kind !== 'AdmissionReview' || !request || !isObject(request.object))
    return { object, note: [] };
  return {
    object: request.object,
    note: ['an AdmissionReview: the object it reviews (request.object) was checked'],
  };
}

/** Whether the policy judged the object: the annotation on its pod, or an RDMA device asked for. */
function judgedBy(
  object: JsonObject,
  config: PolicyConfig,
): { annotated: boolean; judged: boolean } {
  const loc = locatePod(object);
  if (!loc) return { annotated: false, judged: false };
  const annotated =
    isObject(loc.metadata.annotations) &&
    Object.prototype.hasOwnProperty.call(loc.metadata.annotations, SMCR_ANNOTATION);
  return { annotated, judged: annotated || mayUseRdma(loc, config) };
}

export function checkOne(
  sourced: SourcedObject,
  view: ClusterView,
  config: PolicyConfig,
  keep: Keep,
): CheckResult {
  const { source } = sourced;
  const { object, note } = reviewed(sourced.object);
  const d = describe(object);
  const r = evaluate(object, view, config);
  const { annotated, judged } = judgedBy(object, config);
  if (!r.untouched && EXCLUDED_NAMESPACES.includes(d.namespace))
    // As the API server does: the webhook never sees this pod, so nothing is refused or added.
    return {
      source,
      ...d,
      annotated,
      judged,
      allowed: true,
      denials: [],
      warnings: noted([
        ...note,
        `namespace ${d.namespace} is left out of the webhook (its namespaceSelector): this pod is admitted as written, without SMC-R`,
      ]),
      patch: [],
      ...(keep.admitted ? { admitted: object } : {}),
    };
  const warnings = [...noted(note), ...r.warnings, ...noted(strayWarning(object))].filter(
    (w) => !keep.skipWarnings?.has(w.rule),
  );
  const preview = keep.preview ? previewOf(object, r, view, config) : undefined;
  const admitted = keep.admitted && r.allowed ? (r.mutated ?? object) : undefined;
  return {
    source,
    ...d,
    annotated,
    judged: judged && !r.untouched,
    allowed: r.allowed,
    denials: r.denials,
    warnings,
    patch: keep.patch ? r.patch : [],
    ...(preview ? { preview } : {}),
    ...(admitted ? { admitted } : {}),
  };
}

/** The policy does not apply to the object: allowed, not judged (a SKIP, not a PASS), hints or not. */
export const skipped = (r: CheckResult): boolean => r.allowed && !r.judged;
