// annotation-value: the SMC-R annotation must be a boolean Go's strconv.ParseBool reads, and our
// annotations must be strings. Judged before any other rule: without a value, nothing else applies.
import { OWN_PREFIX, SMCR_ANNOTATION } from '../../constants.js';
import { isObject } from '../../util/json.js';
import { clip } from '../../util/text.js';
import { keyPath } from '../locate.js';
import type { Denial, PodLocation } from '../types.js';
import type { Rule } from './rule.js';

export const annotationValue: Rule = {
  id: 'annotation-value',
  scope: 'smcr',
  when: "the value is not a boolean Go's `strconv.ParseBool` reads; or (only `check` sees this, the API server refuses such objects itself) one of our annotations is an unquoted YAML boolean, number, timestamp or null",
  fix: 'write `"true"` or `"false"`; quote the value',
  example: 'examples/invalid/annotation-value.yaml',
};

/**
 * The denial for an SMC-R annotation that is no boolean. An UPDATE's message is brief: the pod
 * runs, and only the new value is wrong.
 */
export function notABoolean(prefix: string, raw: string, brief = false): Denial {
  return {
    rule: 'annotation-value',
    path: keyPath(`${prefix}metadata.annotations`, SMCR_ANNOTATION),
    message: brief
      ? `${SMCR_ANNOTATION} must be "true" or "false", got "${clip(raw, 64)}".`
      : `${SMCR_ANNOTATION} must be "true" or "false" (1, t, T, TRUE, True and 0, f, F, FALSE, False are read too, with a warning), got "${clip(raw, 64)}".`,
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
 * request with 400 (1.37: "cannot be handled as a Pod: json: cannot unmarshal bool into ... annotations")
 * before any webhook is called.
 */
export function nonStringAnnotations(loc: PodLocation): Denial[] {
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
