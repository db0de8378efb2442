// Go's strconv.ParseBool, which the platform's own tooling uses to read the SMC-R annotation, and
// the one reading of that annotation every part of ours shares (smcrRequested).
// https://pkg.go.dev/strconv#ParseBool: "1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False".

import { SMCR_ANNOTATION } from '../constants.js';

const TRUE_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Returns the boolean Go would read, or undefined when Go would return an error. */
export function parseGoBool(value: string): boolean | undefined {
  if (TRUE_WORDS.has(value)) return true;
  if (FALSE_WORDS.has(value)) return false;
  return undefined;
}

/** Whether the value is one of the two spellings we document. */
export function isCanonicalBool(value: string): boolean {
  return value === 'true' || value === 'false';
}

/** The SMC-R annotation as written (`raw`) and as Go reads it (`on`: undefined when not a boolean). */
export interface SmcrAnnotation {
  readonly raw: string;
  readonly on: boolean | undefined;
}

/**
 * The SMC-R annotation (network.alibabacloud.com/erdma-smcr) among these annotations: undefined
 * when absent, or not a string (an unquoted YAML `true` is the API server's to refuse); never an
 * inherited property. The webhook, `check`, pod updates, the misplacement hints and the agent all
 * read it here.
 */
export function smcrRequested(annotations: unknown): SmcrAnnotation | undefined {
  if (typeof annotations !== 'object' || annotations === null) return undefined;
  if (!Object.hasOwn(annotations, SMCR_ANNOTATION)) return undefined;
  const raw = (annotations as Record<string, unknown>)[SMCR_ANNOTATION];
  return typeof raw === 'string' ? { raw, on: parseGoBool(raw) } : undefined;
}
