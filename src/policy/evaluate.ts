// Entry point of the policy: one object in, a verdict (and for a Pod the mutated object and
// its JSON Patch) out. Pure: no I/O, no clock, no state but a bounded memo of settings strings.
// Shared by webhook, CLI and tests.
import {
  MECHANISM_ANNOTATION,
  SELECTION_ANNOTATIONS,
  SETTINGS_ANNOTATION,
  SMCR_ANNOTATION,
  TUNING_ANNOTATIONS,
} from '../constants.js';
import type { PolicyConfig } from '../config/schema.js';
import { annotationHints } from './hints.js';
import { locatePod } from './locate.js';
import { isObject, stringMap } from '../util/json.js';
import { injectPreload, mechanismExpression, preloadPlan, wantsTcp2smc } from './mechanism.js';
import { child, injectNodeAffinity, injectResource, setSettings, stripSettings } from './mutate.js';
import { isCanonicalBool, smcrRequested } from './parse-bool.js';
import { patchOfCopy } from './patch.js';
import { mayUseRdma, rdmaRules, type RdmaOutcome } from './rdma.js';
import { nonStringAnnotations, notABoolean } from './rules/annotation-value.js';
import { POD_RULES, type RuleContext } from './rules/index.js';
import { annotationsTooLarge } from './rules/object-size.js';
import { resolveSelection } from './selection.js';
import { resolveTuning, settingsAnnotation } from './settings.js';
import type {
  ClusterView,
  Denial,
  JsonObject,
  PodLocation,
  PolicyResult,
  Warning,
} from './types.js';

/** Warnings of the annotation itself (its value, its key, where it sits) go under this rule. */
const ANNOTATION_RULE = 'annotation-value';
/** Where misspelled and misplaced keys are warned (src/policy/rules/annotation-placement.ts). */
const PLACEMENT_RULE = 'annotation-placement';
const asWarnings = (rule: string, messages: readonly string[]): Warning[] =>
  messages.map((message) => ({ rule, message }));

export interface EvaluateOptions {
  /** Produce the mutated Pod and its patch (default true). Workload templates are never mutated. */
  readonly mutate?: boolean;
}

const UNTOUCHED: PolicyResult = Object.freeze({
  allowed: true,
  smcr: false,
  untouched: true,
  denials: [],
  warnings: [],
  patch: [],
});

function verdictOf(denials: Denial[], warnings: Warning[], smcr: boolean): PolicyResult {
  return { allowed: denials.length === 0, denials, warnings, smcr, untouched: false, patch: [] };
}

/** An allowed verdict with the patch from `original` to its copy `mutated` (the original when it changed nothing). */
function withPatch(
  warnings: readonly Warning[],
  smcr: boolean,
  original: JsonObject,
  mutated: JsonObject,
): PolicyResult {
  const patch = patchOfCopy(original, mutated);
  return {
    allowed: true,
    denials: [],
    warnings,
    smcr,
    untouched: false,
    patch,
    mutated: patch.length > 0 ? mutated : original,
  };
}

function evaluateOff(
  obj: JsonObject,
  loc: PodLocation,
  warnings: Warning[],
  mutate: boolean,
  rdma: RdmaOutcome,
): PolicyResult {
  const annotations = stringMap(loc.metadata.annotations);
  if (
    [...Object.values(TUNING_ANNOTATIONS), ...Object.values(SELECTION_ANNOTATIONS)].some(
      (k) => annotations[k] !== undefined,
    )
  ) {
    warnings.push({
      rule: 'tuning',
      message: 'SMC-R is off for this pod: its smcr.erdma.io tuning annotations have no effect',
    });
  }
  const result = verdictOf(rdma.denials, [...warnings, ...rdma.warnings], false);
  if (!result.allowed) return result;
  if (!mutate || !loc.isPod || annotations[SETTINGS_ANNOTATION] === undefined) return result;
  const clone = { ...obj };
  stripSettings(clone);
  return withPatch(result.warnings, false, obj, clone);
}

function mutatePod(
  obj: JsonObject,
  ctx: RuleContext,
  settings: string,
  warnings: Warning[],
): JsonObject {
  // Only Pods are mutated: the copy's pod is the copy itself, and ctx.loc reads the same values.
  const clone = { ...obj };
  const plan = preloadPlan(ctx);
  if (ctx.config.injectResource) injectResource(clone, ctx.loc, ctx.config, ctx.annotations);
  if (ctx.config.injectNodeAffinity)
    injectNodeAffinity(clone, plan === 'none' ? undefined : mechanismExpression(plan));
  if (plan === 'inject') {
    const skipped = injectPreload(clone, ctx.config.preloadImage, ctx.selection.text);
    // Where the pod may run decides its mechanism: node-eligibility's warnings.
    warnings.push({
      rule: 'node-eligibility',
      message:
        'the nodes this pod may run on have AF_SMC but no in-kernel TCP-to-SMC switch: its programs get SMC-R ' +
        'through the preload library (LD_PRELOAD), and statically linked ones (Go, busybox) stay on TCP',
    });
    if (skipped.length > 0)
      warnings.push({
        rule: 'node-eligibility',
        message: `LD_PRELOAD of container(s) ${skipped.join(', ')} comes from valueFrom: the preload library was not added there`,
      });
  } else if (wantsTcp2smc(ctx)) {
    // Kept: the pod's own choice, which our CNI plugin reads (the knob where the node has it).
    warnings.push({
      rule: 'selection',
      message:
        'smcr.erdma.io/mechanism: tcp2smc: on nodes with the tcp2smc knob (Alibaba Cloud Linux 3) every TCP connection of this pod uses SMC, its Internet ones too: its SMC selection is not kept there. Remove the annotation to get the preload library, which keeps it (statically linked programs then stay on TCP)',
    });
  } else if (ctx.annotations[MECHANISM_ANNOTATION] !== undefined) {
    delete child(child(clone, 'metadata'), 'annotations')[MECHANISM_ANNOTATION];
  }
  setSettings(clone, settings);
  return clone;
}

/** A pod without the SMC-R annotation: untouched, unless it uses RDMA or misplaced the annotation. */
function withoutAnnotation(
  loc: PodLocation,
  misplaced: string[],
  view: ClusterView,
  config: PolicyConfig,
): PolicyResult {
  if (misplaced.length === 0 && !mayUseRdma(loc, config)) return UNTOUCHED;
  const rdma = rdmaRules(loc, view, config);
  const warnings = [...asWarnings(PLACEMENT_RULE, misplaced), ...rdma.warnings];
  return warnings.length > 0 || rdma.denials.length > 0
    ? verdictOf(rdma.denials, warnings, false)
    : UNTOUCHED;
}

/**
 * Evaluates one object (a Pod or a workload carrying a pod template) against the policy.
 * Objects of other kinds are allowed untouched, and so are pods without the SMC-R annotation,
 * unless they ask for an RDMA device (then the RDMA rules of rdma.ts apply).
 */
export function evaluate(
  obj: unknown,
  view: ClusterView,
  config: PolicyConfig,
  options: EvaluateOptions = {},
): PolicyResult {
  if (!isObject(obj)) return UNTOUCHED;
  const loc = locatePod(obj);
  if (!loc) return UNTOUCHED;
  const requested = smcrRequested(loc.metadata.annotations);
  const misplaced = annotationHints(obj, loc);
  const unquoted = nonStringAnnotations(loc);
  if (unquoted.length > 0) return verdictOf(unquoted, asWarnings(PLACEMENT_RULE, misplaced), false);
  if (requested === undefined) return withoutAnnotation(loc, misplaced, view, config);
  const { raw, on } = requested;
  const oversized = annotationsTooLarge(loc);
  if (oversized) return verdictOf([oversized], asWarnings(PLACEMENT_RULE, misplaced), false);
  const annotations = stringMap(loc.metadata.annotations);

  const mutate = options.mutate !== false && loc.isPod;
  if (on === undefined) {
    return verdictOf([notABoolean(loc.prefix, raw)], asWarnings(PLACEMENT_RULE, misplaced), false);
  }
  const warnings = asWarnings(PLACEMENT_RULE, misplaced);
  if (!isCanonicalBool(raw))
    warnings.push({
      rule: ANNOTATION_RULE,
      message: `${SMCR_ANNOTATION}: "${raw}" is read as "${String(on)}"; write "${String(on)}"`,
    });
  if (!on) return evaluateOff(obj, loc, warnings, mutate, rdmaRules(loc, view, config));

  const ctx: RuleContext = {
    loc,
    view,
    config,
    annotations,
    tuning: resolveTuning(annotations, config),
    selection: resolveSelection(annotations, view),
  };
  const denials: Denial[] = [];
  for (const rule of POD_RULES) {
    const out = rule.check(ctx);
    denials.push(...out.denials);
    warnings.push(...asWarnings(rule.id, out.warnings));
  }
  if (denials.length > 0 || !mutate) return verdictOf(denials, warnings, true);
  const mutated = mutatePod(obj, ctx, settingsAnnotation(ctx.tuning, ctx.selection.text), warnings);
  return withPatch(warnings, true, obj, mutated);
}
