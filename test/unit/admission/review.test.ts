// encodeReviewJson writes the response the route sends without JSON.stringify scanning the
// base64 patch: it must give JSON.stringify(encodeReview(response)) byte for byte.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  encodeReview,
  encodeReviewJson,
  type AdmissionResponse,
} from '../../../src/admission/review.js';

const text = fc.string({ unit: 'binary', maxLength: 40 });

/** Responses with their keys in AdmissionResponse's order, as the handler builds them. */
const responseArb: fc.Arbitrary<AdmissionResponse> = fc
  .record(
    {
      uid: text,
      allowed: fc.boolean(),
      status: fc.record(
        { code: fc.integer({ min: 100, max: 599 }), reason: text, message: text },
        { requiredKeys: ['code', 'message'] },
      ),
      patch: fc.uint8Array({ maxLength: 600 }).map((b) => Buffer.from(b).toString('base64')),
      warnings: fc.array(text, { maxLength: 4 }),
      auditAnnotations: fc.dictionary(text, text, { maxKeys: 4 }),
    },
    { requiredKeys: ['uid', 'allowed'] },
  )
  .map(({ uid, allowed, status, patch, warnings, auditAnnotations }) => {
    const r: AdmissionResponse = { uid, allowed };
    if (status) r.status = status;
    if (patch !== undefined) {
      r.patchType = 'JSONPatch';
      r.patch = patch;
    }
    if (warnings) r.warnings = warnings;
    if (auditAnnotations) r.auditAnnotations = auditAnnotations;
    return r;
  });

describe('encodeReviewJson', () => {
  it('is JSON.stringify(encodeReview(response)) byte for byte', () => {
    fc.assert(
      fc.property(responseArb, (r) => {
        expect(encodeReviewJson(r)).toBe(JSON.stringify(encodeReview(r)));
      }),
      { numRuns: 3000, seed: 2513 },
    );
  });

  it('keeps unicode, quotes and control characters in uid, messages and annotations valid JSON', () => {
    const r: AdmissionResponse = {
      uid: 'a"b\\c\u0000\u2028',
      allowed: false,
      status: { code: 403, message: 'x\ny "z" \ud800' },
      auditAnnotations: { 'k"': 'v\t' },
    };
    expect(JSON.parse(encodeReviewJson(r))).toEqual(encodeReview(r));
  });
});
