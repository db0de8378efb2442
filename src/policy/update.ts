// UPDATE requests. A running pod's spec is mostly immutable and its network namespace is already
// set up, so for pods only what can change is checked: our annotations. For workloads the new
// template is checked fully, but violations already present in the old object only warn, so a
// controller's routine update of an old object is never blocked by this webhook.
import { SETTINGS_ANNOTATION, TUNING_ANNOTATIONS } from '../constants.js';
import type { PolicyConfig } from '../config/schema.js';
import { evaluate } from './evaluate.js';
import { child } from './mutate.js';
import { locatePod } from './locate.js';
import { stringMap } from '../util/json.js';
import { smcrRequested } from './parse-bool.js';
import { patchOfCopy } from './patch.js';
import { notABoolean } from './rules/annotation-value.js';
import { tuningDenial } from './rules/tuning.js';
import { resolveTuning } from './settings.js';
import type {
  ClusterView,
  Denial,
  JsonObject,
  PatchOperation,
  PolicyResult,
  Warning,
} from './types.js';

function annotationsOf(obj: JsonObject | undefined): Record<string, string> {
  const loc = obj ? locatePod(obj) : undefined;
  return stringMap(loc?.metadata.annotations);
}

function result(
  denials: Denial[],
  warnings: Warning[],
  smcr: boolean,
  patch: PatchOperation[] = [],
): PolicyResult {
  return { allowed: denials.length === 0, denials, warnings, smcr, untouched: false, patch };
}

/** Puts the webhook-owned settings annotation back to its old value: users cannot forge it. */
function restoreSettings(pod: JsonObject, oldValue: string | undefined): PatchOperation[] {
  const copy = { ...pod };
  const annotations = child(child(copy, 'metadata'), 'annotations');
  if (oldValue === undefined) delete annotations[SETTINGS_ANNOTATION];
  else annotations[SETTINGS_ANNOTATION] = oldValue;
  return patchOfCopy(pod, copy);
}

function podUpdate(
  pod: JsonObject,
  old: JsonObject | undefined,
  config: PolicyConfig,
  mutate: boolean,
): PolicyResult {
  const now = annotationsOf(pod);
  const before = annotationsOf(old);
  const denials: Denial[] = [];
  const warnings: Warning[] = [];
  const requested = smcrRequested(now);
  if (requested?.raw !== smcrRequested(before)?.raw) {
    if (requested !== undefined && requested.on === undefined) {
      denials.push(notABoolean('', requested.raw, true));
    } else
      warnings.push({
        rule: 'annotation-value',
        message:
          'SMC-R is set up when a pod starts: this annotation change applies only once the pod is recreated',
      });
  }
  const changedTuning: string[] = Object.values(TUNING_ANNOTATIONS).filter(
    (k) => now[k] !== before[k],
  );
  if (changedTuning.length > 0) {
    const problems = resolveTuning(now, config).problems.filter((p) =>
      changedTuning.includes(p.annotation),
    );
    for (const p of problems) denials.push(tuningDenial('', p));
    if (problems.length === 0)
      warnings.push({
        rule: 'tuning',
        message:
          'SMC-R tuning is applied when a pod starts: the change applies once the pod is recreated',
      });
  }
  const smcr = requested?.on === true;
  const forged = now[SETTINGS_ANNOTATION] !== before[SETTINGS_ANNOTATION];
  const patch =
    mutate && forged && denials.length === 0
      ? restoreSettings(pod, before[SETTINGS_ANNOTATION])
      : [];
  return result(denials, warnings, smcr, patch);
}

const denialKey = (d: Denial): string => `${d.rule}\u0000${d.path}`;

function workloadUpdate(
  obj: JsonObject,
  old: JsonObject | undefined,
  view: ClusterView,
  config: PolicyConfig,
): PolicyResult {
  const now = evaluate(obj, view, config, { mutate: false });
  if (now.allowed || !old) return now;
  const before = new Set(evaluate(old, view, config, { mutate: false }).denials.map(denialKey));
  const fresh = now.denials.filter((d) => !before.has(denialKey(d)));
  // A denial the object had before this update is not this update's doing: said, not refused.
  const kept = now.denials
    .filter((d) => before.has(denialKey(d)))
    .map((d) => ({
      rule: d.rule,
      message: `already present before this update: [${d.rule}] ${d.path}`,
    }));
  return {
    ...now,
    allowed: fresh.length === 0,
    denials: fresh,
    warnings: [...now.warnings, ...kept],
  };
}

/** The verdict for an UPDATE of a Pod or a workload. */
export function updateVerdict(
  obj: JsonObject,
  old: JsonObject | undefined,
  view: ClusterView,
  config: PolicyConfig,
  mutate: boolean,
): PolicyResult {
  return obj.kind === 'Pod'
    ? podUpdate(obj, old, config, mutate)
    : workloadUpdate(obj, old, view, config);
}
