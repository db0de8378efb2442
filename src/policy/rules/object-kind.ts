// object-kind: an AdmissionReview whose object is not of the kind the review names. An API server
// never sends one; reviewing it as request.kind would judge (and patch) one object as another.
import { clip } from '../../util/text.js';
import type { Denial, JsonObject } from '../types.js';
import type { Rule } from './rule.js';

export const objectKind: Rule = {
  id: 'object-kind',
  scope: 'review',
  when: "the review's `request.object.kind` (or `oldObject.kind`) differs from `request.kind`: no API server sends this",
  fix: 'send the object in the kind the review names',
};

/** The denial for an object whose kind is not the review's `kind`, if it is not. */
export function kindMismatch(obj: JsonObject, kind: string): Denial | undefined {
  if (obj.kind === undefined || obj.kind === kind) return undefined;
  const got = typeof obj.kind === 'string' ? clip(obj.kind, 63) : typeof obj.kind;
  return {
    rule: 'object-kind',
    path: 'request.object.kind',
    message: `the object is a ${got} but the review says ${clip(kind, 63)}; an API server never sends this, so it is refused.`,
  };
}
