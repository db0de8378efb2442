// Entry point of the policy: one object in, a verdict (and for a Pod the mutated object and
// its JSON Patch) out. Pure: no I/O, no clock, no state but a bounded memo of settings strings.
// Shared by webhook, CLI and tests.
import {
  MECHANISM_ANNOTATION,
  OWN_PREFIX,
  SETTINGS_ANNOTATION,
  SMCR_ANNOTATION,
  TUNING_ANNOTATIONS,
} from '../constants.js';
import type { PolicyConfig } from '../config/schema.js';
import { annotationHints } from './hints.js';
import { keyPath, locatePod } from './locate.js';
import { isObject, stringMap } from '../util/json.js';
import { injectPreload, mechanismExpression, preloadPlan } from './mechanism.js';
import { child, injectNodeAffinity, injectResource, setSettings, stripSettings } from './mutate.js';
import { isCanonicalBool, parseGoBool } from './parse-bool.js';
import { patchOfCopy } from './patch.js';
import { clip } from '../util/text.js';
import { mayUseRdma, rdmaRules, type RdmaOutcome } from './rdma.js';
import { RULES, type RuleContext } from './rules.js';
import { resolveTuning, settingsAnnotation } from './settings.js';
import type { ClusterView, Denial, JsonObject, PodLocation, PolicyResult } from './types.js';

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

function verdictOf(denials: Denial[], warnings: string[], smcr: boolean): PolicyResult {
  return { allowed: denials.length === 0, denials, warnings, smcr, untouched: false, patch: [] };
}

/** An allowed verdict with the patch from `original` to its copy `mutated` (the original when it changed nothing). */
function withPatch(
  warnings: readonly string[],
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

/** The string a map holds at `key` itself, if any (never an inherited property). */
function ownString(map: unknown, key: string): string | undefined {
  if (!isObject(map) || !Object.hasOwn(map, key)) return undefined;
  const v = map[key];
  return typeof v === 'string' ? v : undefined;
}

/**
 * The API server refuses an object whose annotations take more than 256 KiB, keys and values
 * together (apimachinery's TotalAnnotationSizeLimitB), but only after the mutating webhooks have
 * run: such a pod is refused here, before its annotations are copied.
 */
export const MAX_ANNOTATION_BYTES = 256 * 1024;

function annotationsTooLarge(loc: PodLocation): Denial | undefined {
  const raw = loc.metadata.annotations;
  if (!isObject(raw)) return undefined;
  let chars = 0;
  for (const k in raw) {
    const v = raw[k];
    chars += k.length + (typeof v === 'string' ? v.length : 0);
  }
  // A UTF-16 unit is 1 to 3 bytes of UTF-8: count bytes only when it could matter.
  if (chars * 3 <= MAX_ANNOTATION_BYTES) return undefined;
  let bytes = 0;
  for (const k in raw) {
    const v = raw[k];
    bytes += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
  }
  if (bytes <= MAX_ANNOTATION_BYTES) return undefined;
  return {
    rule: 'object-size',
    path: `${loc.prefix}metadata.annotations`,
    message: `the annotations take ${bytes} bytes, and the API server allows at most ${MAX_ANNOTATION_BYTES}: it would refuse this object. Remove annotations.`,
  };
}

function yamlType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a map' : `a YAML ${typeof v}`;
}

/**
 * Our annotations with a value that is not a string: an unquoted `true` or `262144` in YAML. Only
 * `check` can see them: kubectl cannot decode such a manifest, and the API server answers a raw
 * request with 400 ("cannot be handled as a Pod: ... Annotations: ReadString: expects \" or n")
 * before any webhook is called.
 */
function nonStringAnnotations(loc: PodLocation): Denial[] {
  const raw = loc.metadata.annotations;
  if (!isObject(raw) || Object.values(raw).every((v) => typeof v === 'string')) return [];
  return Object.entries(raw)
    .filter(
      ([k, v]) => typeof v !== 'string' && (k === SMCR_ANNOTATION || k.startsWith(OWN_PREFIX)),
    )
    .map(([k, v]) => ({
      rule: 'annotation-value',
      path: keyPath(`${loc.prefix}metadata.annotations`, k),
      message:
        `${k} is ${yamlType(v)}, but annotation values must be strings: quote it` +
        (v === null || typeof v === 'object' ? '' : ` (${JSON.stringify(String(v))})`) +
        '; the API server refuses the object as it is.',
    }));
}

function evaluateOff(
  obj: JsonObject,
  loc: PodLocation,
  warnings: string[],
  mutate: boolean,
  rdma: RdmaOutcome,
): PolicyResult {
  const annotations = stringMap(loc.metadata.annotations);
  if (Object.values(TUNING_ANNOTATIONS).some((k) => annotations[k] !== undefined)) {
    warnings.push('SMC-R is off for this pod: its smcr.erdma.io tuning annotations have no effect');
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
  warnings: string[],
): JsonObject {
  // Only Pods are mutated: the copy's pod is the copy itself, and ctx.loc reads the same values.
  const clone = { ...obj };
  const plan = preloadPlan(ctx);
  if (ctx.config.injectResource) injectResource(clone, ctx.loc, ctx.config, ctx.annotations);
  if (ctx.config.injectNodeAffinity)
    injectNodeAffinity(clone, plan === 'none' ? undefined : mechanismExpression(plan));
  if (plan === 'inject') {
    const skipped = injectPreload(clone, ctx.config.preloadImage);
    warnings.push(
      'the nodes this pod may run on have AF_SMC but no in-kernel TCP-to-SMC switch: its programs get SMC-R ' +
        'through the preload library (LD_PRELOAD), and statically linked ones (Go, busybox) stay on TCP',
    );
    if (skipped.length > 0)
      warnings.push(
        `LD_PRELOAD of container(s) ${skipped.join(', ')} comes from valueFrom: the preload library was not added there`,
      );
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
  const warnings = [...misplaced, ...rdma.warnings];
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
  const raw = ownString(loc.metadata.annotations, SMCR_ANNOTATION);
  const misplaced = annotationHints(obj, loc);
  const unquoted = nonStringAnnotations(loc);
  if (unquoted.length > 0) return verdictOf(unquoted, misplaced, false);
  if (raw === undefined) return withoutAnnotation(loc, misplaced, view, config);
  const oversized = annotationsTooLarge(loc);
  if (oversized) return verdictOf([oversized], misplaced, false);
  const annotations = stringMap(loc.metadata.annotations);

  const mutate = options.mutate !== false && loc.isPod;
  const on = parseGoBool(raw);
  const path = keyPath(`${loc.prefix}metadata.annotations`, SMCR_ANNOTATION);
  if (on === undefined) {
    return verdictOf(
      [
        {
          rule: 'annotation-value',
          path,
          message: `${SMCR_ANNOTATION} must be "true" or "false" (1, t, T, TRUE, True and 0, f, F, FALSE, False are read too, with a warning), got "${clip(raw, 64)}".`,
        },
      ],
      misplaced,
      false,
    );
  }
  const warnings = [...misplaced];
  if (!isCanonicalBool(raw))
    warnings.push(`${SMCR_ANNOTATION}: "${raw}" is read as "${String(on)}"; write "${String(on)}"`);
  if (!on) return evaluateOff(obj, loc, warnings, mutate, rdmaRules(loc, view, config));

  const ctx: RuleContext = {
    loc,
    view,
    config,
    annotations,
    tuning: resolveTuning(annotations, config),
  };
  const denials: Denial[] = [];
  for (const rule of RULES) {
    const out = rule(ctx);
    denials.push(...out.denials);
    warnings.push(...out.warnings);
  }
  if (denials.length > 0 || !mutate) return verdictOf(denials, warnings, true);
  const mutated = mutatePod(obj, ctx, settingsAnnotation(ctx.tuning), warnings);
  return withPatch(warnings, true, obj, mutated);
}
