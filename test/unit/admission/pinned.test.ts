// Responses pinned byte for byte, so that work on the decision's speed (#25) can change how a
// response is built but never what it says: the captured real-apiserver reviews (as captured and
// with our annotations), on /mutate and /validate, and 2,000 seeded random variants of them (the
// fuzzers' field-replacement arbitrary, fixed seed), whose responses are pinned by one SHA-256.
// The same HTTP route builds them (app.inject: parse, decode, decide, serialise).
// To re-pin after an intended change of behaviour: PIN_RESPONSES=1 npx vitest run test/unit/admission/pinned.test.ts
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/policy/types.js';
import {
  annotate,
  fixture,
  replaceAt,
  smcrReview,
  testApp,
  type FixtureName,
} from '../../helpers/reviews.js';

const GOLDEN = 'test/fixtures/responses/pinned.json';
const FIXTURES: FixtureName[] = [
  'deployment-create-dryrun',
  'deployment-create',
  'pod-create-by-replicaset-controller',
  'pod-create-dryrun',
  'pod-create',
  'pod-create-native-sidecar',
  'pod-create-pod-level-resources',
  'pod-update',
  'pod-update-resize',
];
const { app } = testApp();
afterAll(() => app.close());

async function answer(endpoint: 'mutate' | 'validate', review: unknown): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: `/${endpoint}`,
    payload: JSON.stringify(review),
    headers: { 'content-type': 'application/json' },
  });
  return `${res.statusCode} ${res.body}`;
}

/** The named reviews: each capture as is, with the annotation, and with the cases rules care about. */
function cases(): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = {};
  for (const name of FIXTURES) {
    out[`${name} as captured`] = fixture(name);
    out[`${name} smcr`] = smcrReview(name);
    // Every tuning annotation the product knows, in range, and one buffer above what SMC-R uses
    // (a warning): the settings annotation, the patch and the warnings all change with them.
    out[`${name} smcr tuned`] = smcrReview(name, {
      'smcr.erdma.io/wmem': '1048576',
      'smcr.erdma.io/rmem': '262144',
      'smcr.erdma.io/autocorking-size': '65536',
      'smcr.erdma.io/buf-type': '1',
      'smcr.erdma.io/testlink-time': '30',
      'smcr.erdma.io/keep-ipv6': 'true',
    });
    out[`${name} smcr off`] = annotate(fixture(name), {
      'network.alibabacloud.com/erdma-smcr': 'false',
    });
    out[`${name} smcr bad value`] = annotate(fixture(name), {
      'network.alibabacloud.com/erdma-smcr': 'maybe',
    });
  }
  const hostNet = structuredClone(smcrReview('pod-create')) as {
    request: { object: { spec: Record<string, unknown> } };
  } & JsonObject;
  hostNet.request.object.spec.hostNetwork = true;
  out['pod-create smcr hostNetwork'] = hostNet;
  return out;
}

/** The fuzzers' arbitrary: a random field of an annotated review replaced by a random JSON value. */
function variants(): unknown[] {
  const bases = FIXTURES.map((n) => smcrReview(n));
  return fc.sample(
    fc
      .tuple(fc.nat(bases.length - 1), fc.nat(), fc.jsonValue({ maxDepth: 2 }))
      .map(([b, at, value]) => replaceAt(bases[b]!, at, value)),
    { seed: 20261123, numRuns: 2000 },
  );
}

describe('responses pinned byte for byte', () => {
  it('named reviews, both endpoints, and 2,000 seeded variants answer exactly as pinned', async () => {
    const got: Record<string, string> = {};
    for (const [name, review] of Object.entries(cases())) {
      for (const endpoint of ['mutate', 'validate'] as const)
        got[`${endpoint} ${name}`] = await answer(endpoint, review);
    }
    const hash = createHash('sha256');
    for (const v of variants())
      for (const endpoint of ['mutate', 'validate'] as const)
        hash.update(`${await answer(endpoint, v)}\n`);
    got['2000 seeded variants (sha256)'] = hash.digest('hex');
    if (process.env.PIN_RESPONSES === '1' || !existsSync(GOLDEN)) {
      writeFileSync(GOLDEN, `${JSON.stringify(got, null, 2)}\n`);
      if (process.env.CI) throw new Error(`${GOLDEN} was missing: pinned now; commit it`);
    }
    const pinned = JSON.parse(readFileSync(GOLDEN, 'utf8')) as Record<string, string>;
    expect(Object.keys(got).sort()).toEqual(Object.keys(pinned).sort());
    for (const k of Object.keys(pinned)) expect(got[k], k).toBe(pinned[k]);
  });
});
