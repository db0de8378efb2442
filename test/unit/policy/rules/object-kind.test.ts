// The object-kind rule (src/policy/rules/object-kind.ts): a review whose object is not the kind
// it names is refused, whichever of its objects differs, and an object of no kind is read as it.
import { describe, expect, it } from 'vitest';
import { admit } from '../../../../src/admission/decision.js';
import type { AdmissionOperation, AdmissionRequest } from '../../../../src/admission/review.js';
import type { JsonObject } from '../../../../src/policy/types.js';
import { config, pod, unknownView, workload } from '../../../helpers/policy.js';

function request(
  operation: AdmissionOperation,
  object: JsonObject,
  oldObject?: JsonObject,
): AdmissionRequest {
  return {
    uid: 'u1',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation,
    dryRun: false,
    object,
    ...(oldObject ? { oldObject } : {}),
  };
}

describe('rule object-kind', () => {
  it('refuses a Pod review that carries a Deployment, without a patch', () => {
    const d = admit(request('CREATE', workload('Deployment', {})), 'mutate', unknownView, config);
    expect(d.verdict).toBe('denied');
    expect(d.rules).toEqual(['object-kind']);
    expect(d.response.patch).toBeUndefined();
    expect(d.response.status?.message).toBe(
      '[object-kind] request.object.kind: the object is a Deployment but the review says Pod; an API server never sends this, so it is refused.',
    );
  });

  it('refuses an UPDATE whose old object is of another kind', () => {
    const d = admit(
      request('UPDATE', pod(), workload('Deployment', {})),
      'mutate',
      unknownView,
      config,
    );
    expect(d.rules).toEqual(['object-kind']);
  });

  it('reads an object with no kind as the kind the review names', () => {
    const p = pod();
    delete p.kind;
    const d = admit(request('CREATE', p), 'mutate', unknownView, config);
    expect(d.verdict).toBe('allowed');
    expect(d.rules).toEqual([]);
  });
});
