// Hostile reviews: strings and keys that once skipped the policy, label values and log fields an
// attacker controls, media types and kinds that do not match. With failurePolicy: Ignore every
// 4xx admits a pod unreviewed, so a well-formed review must always get a verdict.
import fc from 'fast-check';
import { pino } from 'pino';
import secureJson from 'secure-json-parse';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../../src/admission/app.js';
import { SETTINGS_ANNOTATION } from '../../../src/constants.js';
import type { JsonObject } from '../../../src/policy/types.js';
import { GOOD_KERNEL, node, view } from '../../helpers/policy.js';
import { applyResponse, edit, smcrReview, testApp } from '../../helpers/reviews.js';

const { app } = testApp(view([node('good', GOOD_KERNEL)]));
afterAll(() => app.close());

type Pod = {
  metadata: { annotations: Record<string, string>; name?: string };
  spec: JsonObject & { containers: JsonObject[] };
};
const pod = (r: { request: { object: JsonObject | null } }): Pod =>
  r.request.object as unknown as Pod;

async function post(payload: string, url = '/mutate', headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url,
    payload,
    headers: { 'content-type': 'application/json', ...headers },
  });
  return {
    status: res.statusCode,
    body: res.json() as {
      response: JsonObject & { allowed: boolean; status?: { message: string } };
      code?: string;
      message?: string;
    },
  };
}

const hostNetworkPod = edit(smcrReview('pod-create'), (r) => {
  pod(r).spec.hostNetwork = true;
});

describe('"__proto__" in a review', () => {
  it('still denies a hostNetwork pod whose env holds the string "__proto__"', async () => {
    const review = edit(hostNetworkPod, (r) => {
      pod(r).spec.containers[0]!.env = [{ name: 'X', value: '__proto__' }];
    });
    const { status, body } = await post(JSON.stringify(review));
    expect(status).toBe(200);
    expect(body.response.allowed).toBe(false);
    expect(body.response.status?.message).toMatch(/\[host-network\]/);
  });

  it('gives a verdict when "__proto__" and "constructor" are keys, and none of them reaches a prototype', async () => {
    // Written as text: an object literal would set the prototype instead of a key.
    const text = JSON.stringify(smcrReview('pod-create')).replace(
      '"annotations":{',
      `"__proto__":{"polluted":"meta"},"annotations":{"__proto__":{"${SETTINGS_ANNOTATION}":"{\\"net.smc.tcp2smc\\":\\"0\\"}","polluted":"ann"},` +
        `"constructor":{"prototype":{"polluted":"ctor"}},`,
    );
    expect(text).toContain('"__proto__":{"polluted":"meta"}');
    const { status, body } = await post(text);
    expect(status).toBe(200);
    expect(body.response.allowed).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const mutated = applyResponse(
      JSON.parse(text) as JsonObject,
      body.response as { patch?: string },
    ) as unknown as Pod;
    expect(mutated.metadata.annotations[SETTINGS_ANNOTATION]).toContain('"net.smc.tcp2smc":"1"');
  });

  it('overwrites a forged settings annotation even when the body also holds "__proto__"', async () => {
    const review = edit(
      smcrReview('pod-create', {
        [SETTINGS_ANNOTATION]: '{"net.ipv4.ip_forward":"1"}',
        note: '__proto__',
      }),
      () => undefined,
    );
    const { status, body } = await post(JSON.stringify(review));
    expect(status).toBe(200);
    const mutated = applyResponse(review, body.response as { patch?: string }) as unknown as Pod;
    expect(mutated.metadata.annotations[SETTINGS_ANNOTATION]).not.toContain('ip_forward');
  });
});

/** JSON text of an arbitrary value whose object keys include the dangerous names (built as text, so they stay keys). */
const hostileJson: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.string({ unit: 'binary' }).map((s) => JSON.stringify(s)),
    fc.constantFrom(
      '"__proto__"',
      '"constructor"',
      'null',
      'true',
      '-0',
      '1e308',
      '"\\u0000"',
      '"\\ud800"',
    ),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
    fc.array(tie('value'), { maxLength: 3 }).map((a) => `[${a.join(',')}]`),
    fc
      .array(
        fc.tuple(
          fc.oneof(
            fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'),
            fc.string({ unit: 'binary' }),
          ),
          tie('value'),
        ),
        { maxLength: 4 },
      )
      .map((kv) => `{${kv.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  ),
})).value;

/** Places hostile JSON texts inside the pod of a review (as text, at places a pod has maps and strings). */
function embed(base: JsonObject, at: number, json: string, key: string): string {
  const marker = '"@@HOSTILE@@"';
  const review = edit(base, (r) => {
    const p = pod(r);
    const places: (() => void)[] = [
      () => (p.metadata.annotations[key] = marker as never),
      () => ((p.metadata as JsonObject).labels = { [key]: marker }),
      () => (p.spec.containers[0]!.env = [{ name: key, value: marker }]),
      () => (p.spec.nodeSelector = { [key]: marker }),
      () => ((p.spec.containers[0]!.resources as JsonObject) = { limits: { [key]: marker } }),
      () => ((p as unknown as JsonObject)[key] = marker),
      () => ((p.spec as JsonObject).extra = marker),
    ];
    places[at % places.length]!();
  });
  return JSON.stringify(review).replace(marker, json);
}

describe('every well-formed AdmissionReview gets a verdict', () => {
  it('answers 200 with allowed true/false whatever keys, strings and unicode the object holds, and still denies hostNetwork', async () => {
    let withProto = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        hostileJson,
        fc.oneof(
          fc.constantFrom('__proto__', 'constructor'),
          fc.string({ unit: 'binary', minLength: 1 }),
        ),
        fc.boolean(),
        async (at, json, key, hostNet) => {
          const text = embed(hostNet ? hostNetworkPod : smcrReview('pod-create'), at, json, key);
          if (text.includes('"__proto__"')) withProto += 1;
          const { status, body } = await post(text);
          expect(status, text.slice(0, 300)).toBe(200);
          expect(typeof body.response.allowed).toBe('boolean');
          if (hostNet) expect(body.response.status?.message).toMatch(/\[host-network\]/);
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        },
      ),
      { numRuns: 1500 },
    );
    // The generator must have exercised the case that once bypassed the policy.
    expect(withProto).toBeGreaterThan(100);
  });
});

describe('bounded metric labels and log fields', () => {
  it('keeps /metrics small after reviews with thousands of distinct, huge kinds (DELETE, CONNECT, subresources)', async () => {
    const t = testApp();
    try {
      const before = (await t.app.inject({ method: 'GET', url: '/metrics' })).body.length;
      for (let i = 0; i < 300; i++) {
        const review = edit(smcrReview('pod-create'), (r) => {
          const req = r.request as unknown as JsonObject;
          req.kind = {
            group: '',
            version: 'v1',
            kind: `Kind${i}${'k'.repeat(i % 3 === 0 ? 64 * 1024 : 10)}`,
          };
          if (i % 3 === 0) r.request.operation = 'DELETE';
          else if (i % 3 === 1) r.request.operation = 'CONNECT';
          else r.request.subResource = 'status';
        });
        expect(
          (
            await t.app.inject({
              method: 'POST',
              url: '/validate',
              payload: review,
              headers: { 'content-type': 'application/json' },
            })
          ).statusCode,
        ).toBe(200);
      }
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(text.length - before).toBeLessThan(2048);
      expect(text).toMatch(
        /erdma_smcr_admission_requests_total\{endpoint="validate",operation="DELETE",kind="other",verdict="skipped",dry_run="false"\} 100/,
      );
      expect(text).not.toContain('Kind1');
    } finally {
      await t.app.close();
    }
  });

  it('clips uid, kind, namespace and name in the decision log line', async () => {
    const lines: string[] = [];
    const t = testApp(
      undefined,
      {},
      pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }),
    );
    try {
      const big = 'n'.repeat(1.5 * 1024 * 1024);
      const review = edit(smcrReview('pod-create'), (r) => {
        const req = r.request as unknown as JsonObject;
        req.uid = big;
        req.namespace = big;
        req.name = big;
        r.request.operation = 'DELETE';
        req.kind = { group: '', version: 'v1', kind: big };
      });
      const res = await t.app.inject({
        method: 'POST',
        url: '/mutate',
        payload: review,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.statusCode).toBe(200);
      const line = lines.find((l) => l.includes('admission decision'));
      expect(line).toBeDefined();
      expect(line!.length).toBeLessThan(2048);
      expect(JSON.parse(line!).name).toMatch(/^n{253}\.\.\.\(1572864 chars\)$/);
    } finally {
      await t.app.close();
    }
  });
});

describe('bad requests with huge strings', () => {
  const big = 'x'.repeat(7 * 1024 * 1024);
  it.each([
    ['apiVersion', (r: JsonObject) => void (r.apiVersion = big)],
    ['kind', (r: JsonObject) => void (r.kind = big)],
    ['request.operation', (r: JsonObject) => void ((r.request as JsonObject).operation = big)],
    [
      'request.kind.kind (an unsupported kind)',
      (r: JsonObject) =>
        void ((r.request as JsonObject).kind = { group: '', version: 'v1', kind: big }),
    ],
  ])('answers a 7 MiB %s with a short 400 and a short log line', async (_what, spoil) => {
    const lines: string[] = [];
    const t = testApp(
      undefined,
      { 'webhook.bodyLimit': 16 * 1024 * 1024, 'webhook.pendingBodyBytes': 32 * 1024 * 1024 },
      pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }),
    );
    try {
      const review = smcrReview('pod-create') as unknown as JsonObject;
      spoil(review);
      const res = await t.app.inject({
        method: 'POST',
        url: '/mutate',
        payload: JSON.stringify(review),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.statusCode).toBe(400);
      expect(res.body.length).toBeLessThan(1024);
      expect(res.json().message).toMatch(/\.\.\.\(7340032 chars\)/);
      expect(lines.length).toBeGreaterThan(0);
      for (const l of lines) expect(l.length).toBeLessThan(2048);
    } finally {
      await t.app.close();
    }
  });

  it('clips a long path in the 404 message', async () => {
    const res = await app.inject({
      method: 'POST',
      url: `/${'p'.repeat(8000)}`,
      payload: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(404);
    expect(res.body.length).toBeLessThan(400);
  });

  it('clips a long annotation value in the denial it is echoed in', async () => {
    const review = smcrReview('pod-create', {
      'network.alibabacloud.com/erdma-smcr': '9'.repeat(100_000),
    });
    const { status, body } = await post(JSON.stringify(review));
    expect(status).toBe(200);
    expect(body.response.allowed).toBe(false);
    expect(body.response.status!.message.length).toBeLessThan(400);
    expect(body.response.status!.message).toContain('...(100000 chars)');
  });
});

describe('media types and kinds', () => {
  it('answers a non-JSON content type with a 415 that says what to send', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/mutate',
      payload: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toMatchObject({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: expect.stringContaining('application/json'),
    });
    expect(res.json().message).not.toMatch(/not valid JSON/);
  });

  it.each([['utf-16'], ['UTF-16LE'], ['"latin1"'], ['iso-8859-1']])(
    'refuses charset=%s with 415 instead of misreading it',
    async (charset) => {
      const { status, body } = await post(JSON.stringify(smcrReview('pod-create')), '/mutate', {
        'content-type': `application/json; charset=${charset}`,
      });
      expect(status).toBe(415);
      expect(body.message).toMatch(/UTF-8/);
    },
  );

  it.each([['utf-8'], ['UTF8'], ['"utf-8"']])('accepts charset=%s', async (charset) => {
    const { status } = await post(JSON.stringify(smcrReview('pod-create')), '/mutate', {
      'content-type': `application/json; charset=${charset}`,
    });
    expect(status).toBe(200);
  });

  it('denies, without a patch, a review whose request.kind is Pod but whose object is a Deployment', async () => {
    const deployment = smcrReview('deployment-create');
    const review = edit(smcrReview('pod-create'), (r) => {
      r.request.object = (deployment.request as { object: JsonObject }).object;
    });
    const { status, body } = await post(JSON.stringify(review));
    expect(status).toBe(200);
    expect(body.response.allowed).toBe(false);
    expect(body.response.patch).toBeUndefined();
    expect(body.response.status?.message).toMatch(/\[object-kind\].*Deployment.*Pod/);
  });
});

/** Writes some characters of a JSON text's strings as \u escapes, as another encoder might. */
function escapeSome(text: string, pick: readonly boolean[]): string {
  let i = 0;
  return text.replace(/"(?:[^"\\]|\\.)*"/g, (s) =>
    // Escapes already there are kept whole; only plain letters and underscores are rewritten.
    s.replace(/(\\u[0-9a-fA-F]{4}|\\.)|[a-z_]/g, (c, escape?: string) =>
      escape || !pick[i++ % pick.length]
        ? c
        : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    ),
  );
}

describe('parseJsonBody', () => {
  it('gives what secure-json-parse gives (dangerous keys removed), whether or not it takes the JSON.parse-only path', () => {
    let fast = 0;
    fc.assert(
      fc.property(
        hostileJson,
        fc.array(fc.boolean(), { minLength: 1, maxLength: 7 }),
        (json, pick) => {
          const text = pick.every((p) => !p) ? json : escapeSome(json, pick);
          const expected = secureJson.parse(text, undefined, {
            protoAction: 'remove',
            constructorAction: 'remove',
          });
          if (!text.includes('\\u') && !text.includes('proto')) fast += 1;
          const got = parseJsonBody(text);
          expect(JSON.stringify(got)).toBe(JSON.stringify(expected));
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        },
      ),
      { numRuns: 3000 },
    );
    // Both paths ran.
    expect(fast).toBeGreaterThan(100);
    expect(fast).toBeLessThan(2900);
  });
});
