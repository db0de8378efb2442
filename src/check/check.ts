// `erdma-smcr check`: runs the admission policy over manifests offline, for people and CI.
import type { PolicyConfig } from '../config/schema.js';
import type { ProfileChoice } from '../cluster/offline.js';
import { PROFILE_KIND } from '../cluster/profile.js';
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
import {
  expandPaths,
  type SpecialFile,
  inputReader,
  visitInputs,
  type InputError,
  type NotObject,
  type SourcedObject,
} from './inputs.js';
import { profileCandidatesAbove, scopeProfiles, type FoundProfile } from './profiles.js';
import { resolve } from 'node:path';

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

export interface CheckReport {
  readonly results: readonly CheckResult[];
  /** What the run decided that a person should know (which profile was not used), for stderr. */
  readonly notices?: readonly string[];
  /** Inputs that could not be read or parsed (the exit code is then 2, after every other file was checked). */
  readonly errors: readonly InputError[];
  readonly summary: {
    readonly objects: number;
    readonly allowed: number;
    readonly denied: number;
    /** Warnings over all objects (--fail-on-warn makes them fail the run). */
    readonly warnings: number;
    /** Allowed objects the policy does not apply to (no SMC-R annotation, no RDMA device), without warnings. */
    readonly skipped: number;
    readonly errors: number;
  };
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

function checkOne(
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

function report(
  results: CheckResult[],
  errors: readonly InputError[],
  counts: { objects: number; denied: number; warnings: number; skipped: number },
): CheckReport {
  const { objects, denied, warnings } = counts;
  return {
    results,
    errors,
    summary: {
      objects,
      allowed: objects - denied,
      denied,
      warnings,
      skipped: counts.skipped,
      errors: errors.length,
    },
  };
}

/** A text that may hold a ClusterProfile document (files without one are not parsed for it). */
const MAY_HOLD_PROFILE = new RegExp(PROFILE_KIND);

/**
 * `check` over paths, file by file: memory holds one file's objects and the (small) results, not
 * the whole tree. ClusterProfiles among the inputs are found first, in the files that mention them
 * (./profiles.ts says which judges which file).
 */
export function checkPaths(
  paths: readonly string[],
  stdin: () => string,
  choice: ProfileChoice,
  config: PolicyConfig,
  keep: Keep,
  /** Given: each result goes here as soon as it is known and is not kept (the report's results stay empty). */
  onResult?: (r: CheckResult) => void,
  /** Files whose path (as found under the paths given) matches one of these are not read (--exclude). */
  exclude: readonly RegExp[] = [],
  /**
   * Documents that are not Kubernetes objects (a Grafana dashboard, a Prometheus rule file, a
   * kustomize JSON patch: what real manifest trees hold beside their objects): `skip` them with one
   * note for the run, or make each an `error` (exit 2), as before (--not-objects).
   */
  notObjects: 'skip' | 'error' = 'skip',
): CheckReport {
  const errors: InputError[] = [];
  const specials: SpecialFile[] = [];
  const files = expandPaths(paths, errors, specials).filter(
    (f) => f === '-' || !exclude.some((re) => re.test(f)),
  );
  let stdinText: string | undefined;
  const readStdin = (): string => (stdinText ??= stdin());
  const read = inputReader();
  const profiles: FoundProfile[] = [];
  const collect = (objs: SourcedObject[], file: string): void => {
    for (const o of objs) if (o.object.kind === PROFILE_KIND) profiles.push({ file, profile: o });
  };
  // Without --profile the inputs' profiles are found first, in the files that mention one (each
  // such file is read twice); with it, the main pass notes them as it goes, for the notice.
  if (!choice.profileFile) visitInputs(files, readStdin, collect, [], MAY_HOLD_PROFILE, read);
  // A ClusterProfile above the paths, in the same repository, judges them too (#70); one that
  // cannot be read there is none of this run's business.
  const inputs = new Set(files.map((f) => resolve(f)));
  const above = profileCandidatesAbove(paths).filter((f) => !inputs.has(f));
  visitInputs(above, () => '', collect, [], MAY_HOLD_PROFILE);
  const viewFor = scopeProfiles(choice, choice.profileFile ? [] : profiles, files);
  const results: CheckResult[] = [];
  /** SMC-R objects judged without a node list (a note for the run, not a warning per object). */
  let blind = 0;
  const skippedDocs: NotObject[] = [];
  let objects = 0;
  let denied = 0;
  let skips = 0;
  let warnings = 0;
  visitInputs(
    files,
    readStdin,
    (objs, file) => {
      if (objs.length === 0) return;
      const view = viewFor(file);
      for (const o of objs) {
        if (o.object.kind === PROFILE_KIND) {
          if (choice.profileFile) profiles.push({ file, profile: o });
          continue;
        }
        const r = checkOne(o, view, config, keep);
        if (r.annotated && !view.nodesKnown) blind += 1;
        objects += 1;
        warnings += r.warnings.length;
        if (!r.allowed) denied += 1;
        if (skipped(r)) skips += 1;
        if (onResult) onResult(r);
        else results.push(r);
      }
    },
    errors,
    undefined,
    read,
    notObjects === 'skip' ? skippedDocs : undefined,
  );
  const notices = runNotices(choice, profiles, skippedDocs, specials, exclude, blind);
  // A gate that checked nothing must not pass, in any format: an empty or mistyped tree, an
  // empty stdin, a tree of nothing but skipped documents is an input error of its own (#70).
  if (objects === 0 && errors.length === 0)
    for (const p of paths) {
      const name = p === '-' ? '<stdin>' : p;
      errors.push({
        source: name,
        code: 'NOTHING_TO_CHECK',
        message: `nothing to check: no Kubernetes objects in ${name}`,
      });
    }
  return { ...report(results, errors, { objects, denied, warnings, skipped: skips }), notices };
}

export function runCheck(
  objects: readonly SourcedObject[],
  view: ClusterView,
  config: PolicyConfig,
  errors: readonly InputError[] = [],
): CheckReport {
  const results = objects.map((o) => checkOne(o, view, config, { patch: true }));
  return report(results, errors, {
    objects: results.length,
    denied: results.filter((r) => !r.allowed).length,
    warnings: results.reduce((n, r) => n + r.warnings.length, 0),
    skipped: results.filter(skipped).length,
  });
}

/** The run's notices: unused profiles, skipped documents and special files, unknown nodes. */
function runNotices(
  choice: ProfileChoice,
  profiles: readonly FoundProfile[],
  skippedDocs: readonly NotObject[],
  specials: readonly SpecialFile[],
  exclude: readonly RegExp[],
  blind: number,
): string[] {
  const unused = choice.profileFile
    ? profiles.filter((p) => resolve(p.file) !== resolve(choice.profileFile!))
    : [];
  const noted = specials.filter((f) => !exclude.some((re) => re.test(f.path)));
  return [
    ...(unused.length > 0
      ? [
          `--profile ${choice.profileFile} judges every manifest; the ClusterProfile${unused.length > 1 ? 's' : ''} in ${unused.map((p) => p.profile.source).join(', ')} ${unused.length > 1 ? 'are' : 'is'} not used`,
        ]
      : []),
    ...(skippedDocs.length > 0 ? [notObjectsNote(skippedDocs)] : []),
    ...(noted.length > 0 ? [specialFilesNote(noted)] : []),
    ...(blind > 0
      ? [
          `node list unknown: the node checks (kernel, driver mode, capability) were skipped for ${blind} SMC-R object(s); give the cluster's nodes with --profile or --nodes to run them`,
        ]
      : []),
  ];
}

/** One note for the files of the walk that are not regular files: how many, which, what each is. */
function specialFilesNote(files: readonly SpecialFile[]): string {
  const shown = files
    .slice(0, 5)
    .map((f) => `${f.path} (${f.kind})`)
    .join(', ');
  const more = files.length > 5 ? ` and ${files.length - 5} more` : '';
  return `skipped ${files.length} file(s) in the directories that are not regular files: ${shown}${more}; to check what one holds, name it as an input (a named pipe is read as stdin is) or pass it on stdin with -`;
}

/** One note for the documents skipped as not Kubernetes objects: how many, in which files. */
function notObjectsNote(docs: readonly NotObject[]): string {
  const files = [...new Set(docs.map((d) => d.source.replace(/:\d+(#.*)?$/, '')))];
  const shown = files.slice(0, 5).join(', ');
  const more = files.length > 5 ? ` and ${files.length - 5} more` : '';
  return `skipped ${docs.length} document(s) that are not Kubernetes objects (no apiVersion and kind) in ${shown}${more}; --not-objects error makes each an input error`;
}
