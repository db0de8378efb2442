// Fuzzing the webhook: random and malformed bodies never crash it, never produce a 5xx, and
// always get a well-formed answer (an AdmissionReview echoing the uid, or a coded 4xx error).
import fc from 'fast-check';
import fastJsonPatch from 'fast-json-patch';
import { afterAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/policy/types.js';
import { fixture, replaceAt, smcrReview, testApp } from '../../helpers/reviews.js';
import { postH1, startTestServer } from '../../helpers/tls.js';

const { app } = testApp();
afterAll(() => app.close());

const base = smcrReview('pod-create');

/** Replaces the value at a random JSON pointer of the review with a random JSON value. */
const mutateAt = (review: JsonObject, pointerIndex: number, value: unknown): JsonObject =>
  replaceAt(review, pointerIndex, value) as JsonObject;

function checkAnswer(status: number, text: string, uid: unknown): void {
  expect(status).toBeLessThan(500);
  const body = JSON.parse(text);
  if (status === 200) {
    expect(body.apiVersion).toBe('admission.k8s.io/v1');
    expect(body.kind).toBe('AdmissionReview');
    expect(body.response.uid).toBe(uid);
    expect(typeof body.response.allowed).toBe('boolean');
    if (body.response.patch) {
      expect(body.response.patchType).toBe('JSONPatch');
      expect(Array.isArray(JSON.parse(Buffer.from(body.response.patch, 'base64').toString()))).toBe(
        true,
      );
    }
    for (const w of body.response.warnings ?? []) expect(w.length).toBeLessThan(120);
  } else {
    expect([400, 413, 415]).toContain(status);
    expect(body).toEqual({ code: expect.any(String), message: expect.any(String) });
  }
}

describe('webhook fuzzing', () => {
  it('answers arbitrary byte strings with a coded 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.uint8Array().map((b) => Buffer.from(b).toString('latin1')),
        ),
        async (payload) => {
          const res = await app.inject({
            method: 'POST',
            url: '/mutate',
            payload,
            headers: { 'content-type': 'application/json' },
          });
          checkAnswer(res.statusCode, res.body, undefined);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('answers reviews with a random field replaced by a random value, on both endpoints', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.jsonValue(),
        fc.constantFrom('/mutate', '/validate'),
        async (at, value, url) => {
          const review = mutateAt(base, at, value);
          const res = await app.inject({
            method: 'POST',
            url,
            payload: JSON.stringify(review),
            headers: { 'content-type': 'application/json' },
          });
          const uid = (review as { request?: { uid?: unknown } })?.request?.uid;
          checkAnswer(res.statusCode, res.body, uid);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('answers random pods inside real reviews, and every patch applies to the object', async () => {
    const pods = fc.record({
      metadata: fc.record({
        annotations: fc.dictionary(
          fc.constantFrom(
            'network.alibabacloud.com/erdma-smcr',
            'smcr.erdma.io/wmem',
            'smcr.erdma.io/settings',
            'a/b~c',
          ),
          fc.string(),
        ),
      }),
      spec: fc.record(
        {
          containers: fc.array(
            fc.record({ name: fc.string(), resources: fc.anything() }, { requiredKeys: [] }),
            { maxLength: 3 },
          ),
          hostNetwork: fc.anything(),
        },
        { requiredKeys: [] },
      ),
    });
    await fc.assert(
      fc.asyncProperty(pods, async (pod) => {
        const review = structuredClone(fixture('pod-create')) as {
          request: { object: JsonObject; uid: string };
        };
        review.request.object = { ...review.request.object, ...pod };
        const res = await app.inject({
          method: 'POST',
          url: '/mutate',
          payload: JSON.stringify(review),
          headers: { 'content-type': 'application/json' },
        });
        checkAnswer(res.statusCode, res.body, review.request.uid);
        const patch = res.json().response?.patch;
        if (patch) {
          const ops = JSON.parse(Buffer.from(patch, 'base64').toString());
          expect(() =>
            fastJsonPatch.applyPatch(structuredClone(review.request.object), ops, true, false),
          ).not.toThrow();
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('survives malformed bodies over real TLS and keeps serving', async () => {
    const t = await startTestServer();
    try {
      await fc.assert(
        fc.asyncProperty(fc.string({ maxLength: 200 }), async (payload) => {
          const r = await postH1(t.server.port, t.ca(), '/validate', payload);
          checkAnswer(r.status, r.body, undefined);
        }),
        { numRuns: 150 },
      );
      const ok = await postH1(t.server.port, t.ca(), '/mutate', JSON.stringify(base));
      expect(ok.status).toBe(200);
    } finally {
      await t.stop();
    }
  });
});
