import { afterAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { SETTINGS_ANNOTATION } from '../../../src/constants.js';
import type { JsonObject } from '../../../src/policy/types.js';
import { GOOD_KERNEL, node, OLD_KERNEL, view } from '../../helpers/policy.js';
import {
  annotate,
  applyResponse,
  edit,
  fixture,
  smcrReview,
  testApp,
} from '../../helpers/reviews.js';

const { app, metrics } = testApp(view([node('good', GOOD_KERNEL), node('old', OLD_KERNEL)]));
afterAll(() => app.close());

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: `${path}?timeout=10s`,
    payload: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
  return {
    status: res.statusCode,
    type: res.headers['content-type'],
    body: res.json() as JsonObject & { response: Record<string, unknown> },
  };
}

describe('POST /mutate', () => {
  it('mutates a ReplicaSet-created pod (generateName, no name) and the patch applies', async () => {
    const review = smcrReview('pod-create-by-replicaset-controller');
    const { status, type, body } = await post('/mutate', review);
    expect(status).toBe(200);
    expect(type).toBe('application/json; charset=utf-8');
    expect(body).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
    const r = body.response;
    expect(r).toMatchObject({
      uid: (review.request as { uid: string }).uid,
      allowed: true,
      patchType: 'JSONPatch',
    });
    const pod = applyResponse(review, r) as {
      metadata: { annotations: Record<string, string> };
      spec: { containers: { resources: unknown }[] };
    };
    expect(pod.metadata.annotations[SETTINGS_ANNOTATION]).toContain('net.smc.tcp2smc');
    expect(pod.spec.containers[0]?.resources).toMatchObject({ limits: { 'aliyun/erdma': '1' } });
    expect(r.auditAnnotations).toEqual({ decision: 'allowed', smcr: 'true', mutated: 'true' });
  });

  it('escapes "/" in annotation keys as ~1 in the patch', async () => {
    const { body } = await post('/mutate', smcrReview('pod-create'));
    const ops = JSON.parse(Buffer.from(body.response.patch as string, 'base64').toString());
    expect(ops.map((o: { path: string }) => o.path)).toContain(
      '/metadata/annotations/smcr.erdma.io~1settings',
    );
  });

  it('treats a dry-run request exactly like a real one', async () => {
    const real = (await post('/mutate', smcrReview('pod-create'))).body.response;
    const dry = (await post('/mutate', smcrReview('pod-create-dryrun'))).body.response;
    expect(dry.patch).toBe(real.patch);
    expect(dry.allowed).toBe(true);
  });

  it('denies with status 403 and the policy message, and sends no patch', async () => {
    const review = edit(smcrReview('pod-create'), (r) => {
      (r.request.object as { spec: JsonObject }).spec.hostNetwork = true;
    });
    const { status, body } = await post('/mutate', review);
    expect(status).toBe(200);
    expect(body.response).toMatchObject({
      allowed: false,
      status: { code: 403, reason: 'Forbidden' },
    });
    expect((body.response.status as { message: string }).message).toMatch(
      /^\[host-network\] spec\.hostNetwork: SMC-R cannot be enabled/,
    );
    expect(body.response.patch).toBeUndefined();
    expect(body.response.patchType).toBeUndefined();
    expect(body.response.auditAnnotations).toMatchObject({
      decision: 'denied',
      'denied-rules': 'host-network',
    });
  });

  it('denies a pod pinned to a node with an old kernel, naming it', async () => {
    const review = edit(smcrReview('pod-create'), (r) => {
      (r.request.object as { spec: JsonObject }).spec.nodeName = 'old';
    });
    const msg = ((await post('/mutate', review)).body.response.status as { message: string })
      .message;
    expect(msg).toMatch(/old \(kernel 5\.10\.134-16\.3\.al8\.x86_64 is older than 5\.10\.134-17\)/);
  });

  it('returns warnings without a "Warning:" prefix, each under 120 characters', async () => {
    const review = annotate(fixture('pod-create'), {
      'network.alibabacloud.com/erdma-smcr': 'True',
      'smcr.erdma.io/wmem': '1048576',
    });
    const warnings = (await post('/mutate', review)).body.response.warnings as string[];
    expect(warnings.length).toBeGreaterThanOrEqual(2);
    for (const w of warnings) {
      expect(w.length).toBeLessThan(120);
      expect(w).not.toMatch(/^warning/i);
    }
  });

  it('leaves a pod without the annotation alone: allowed, no patch', async () => {
    const { body } = await post('/mutate', fixture('pod-create'));
    expect(body.response).toEqual({
      uid: expect.any(String),
      allowed: true,
      auditAnnotations: { decision: 'skipped' },
    });
  });

  it('ignores DELETE (object null, oldObject set) and subresources', async () => {
    const del = edit(smcrReview('pod-create'), (r) => {
      r.request.operation = 'DELETE';
      r.request.oldObject = r.request.object;
      r.request.object = null;
    });
    expect((await post('/mutate', del)).body.response).toMatchObject({
      allowed: true,
      auditAnnotations: { decision: 'skipped' },
    });
    const sub = edit(smcrReview('pod-create'), (r) => {
      r.request.subResource = 'status';
      (r.request.object as { spec: JsonObject }).spec.hostNetwork = true;
    });
    expect((await post('/mutate', sub)).body.response.allowed).toBe(true);
  });

  it('on UPDATE of a pod never patches the spec and only checks changed annotations', async () => {
    const plain = annotate(
      annotate(fixture('pod-update'), { 'network.alibabacloud.com/erdma-smcr': 'true' }),
      { 'network.alibabacloud.com/erdma-smcr': 'true' },
      'oldObject',
    );
    const res = (await post('/mutate', plain)).body.response;
    expect(res).toMatchObject({ allowed: true });
    expect(res.patch).toBeUndefined();
    const added = annotate(fixture('pod-update'), {
      'network.alibabacloud.com/erdma-smcr': 'true',
    });
    const warned = (await post('/mutate', added)).body.response;
    expect(warned.allowed).toBe(true);
    expect((warned.warnings as string[])[0]).toMatch(/once the pod is recreated/);
    const bad = annotate(fixture('pod-update'), { 'network.alibabacloud.com/erdma-smcr': 'sure' });
    expect((await post('/mutate', bad)).body.response.allowed).toBe(false);
  });

  it('on UPDATE puts back a settings annotation a user tried to change', async () => {
    const before = annotate(
      fixture('pod-update'),
      { 'network.alibabacloud.com/erdma-smcr': 'true', [SETTINGS_ANNOTATION]: 'original' },
      'oldObject',
    );
    const review = annotate(before, {
      'network.alibabacloud.com/erdma-smcr': 'true',
      [SETTINGS_ANNOTATION]: 'forged',
    });
    const res = (await post('/mutate', review)).body.response;
    const pod = applyResponse(review, res) as { metadata: { annotations: Record<string, string> } };
    expect(pod.metadata.annotations[SETTINGS_ANNOTATION]).toBe('original');
  });

  it('on UPDATE removes a settings annotation a user added to a pod that had none', async () => {
    const before = annotate(
      fixture('pod-update'),
      { 'network.alibabacloud.com/erdma-smcr': 'true' },
      'oldObject',
    );
    const review = annotate(before, {
      'network.alibabacloud.com/erdma-smcr': 'true',
      [SETTINGS_ANNOTATION]: '{"version":1,"sysctls":{"net.smc.wmem":"1"}}',
    });
    const res = (await post('/mutate', review)).body.response;
    expect(res.allowed).toBe(true);
    const pod = applyResponse(review, res) as { metadata: { annotations: Record<string, string> } };
    expect(pod.metadata.annotations).not.toHaveProperty(SETTINGS_ANNOTATION);
    expect(pod.metadata.annotations['network.alibabacloud.com/erdma-smcr']).toBe('true');
  });

  it('on UPDATE denies a tuning annotation changed to a value out of range, warns on one in range, and leaves unchanged ones alone', async () => {
    const before = annotate(
      fixture('pod-update'),
      { 'network.alibabacloud.com/erdma-smcr': 'true', 'smcr.erdma.io/rmem': '1' },
      'oldObject',
    );
    const out = (
      await post(
        '/mutate',
        annotate(before, {
          'network.alibabacloud.com/erdma-smcr': 'true',
          'smcr.erdma.io/rmem': '1',
          'smcr.erdma.io/wmem': '1',
        }),
      )
    ).body.response;
    expect(out).toMatchObject({ allowed: false, status: { code: 403 } });
    expect((out.status as { message: string }).message).toBe(
      '[tuning] metadata.annotations[smcr.erdma.io/wmem]: smcr.erdma.io/wmem 1 is outside 16384..1073741823 bytes (net.smc.wmem).',
    );
    const fine = (
      await post(
        '/mutate',
        annotate(before, {
          'network.alibabacloud.com/erdma-smcr': 'true',
          'smcr.erdma.io/rmem': '1',
          'smcr.erdma.io/wmem': '262144',
        }),
      )
    ).body.response;
    expect(fine.allowed).toBe(true);
    expect(fine.warnings).toEqual([
      'SMC-R tuning is applied when a pod starts: the change applies once the pod is recreated',
    ]);
  });
});

describe('POST /validate', () => {
  it('refuses a Deployment with an invalid template at dry-run, pointing into spec.template', async () => {
    const review = edit(smcrReview('deployment-create-dryrun'), (r) => {
      (
        r.request.object as { spec: { template: { spec: JsonObject } } }
      ).spec.template.spec.hostNetwork = true;
    });
    const res = (await post('/validate', review)).body.response;
    expect(res).toMatchObject({ allowed: false, status: { code: 403 } });
    expect((res.status as { message: string }).message).toContain('spec.template.spec.hostNetwork');
  });

  it('allows a valid Deployment and never returns a patch', async () => {
    const res = (await post('/validate', smcrReview('deployment-create'))).body.response;
    expect(res.allowed).toBe(true);
    expect(res.patch).toBeUndefined();
  });

  it('on UPDATE only denies violations the update introduces', async () => {
    const bad = (
      r: { request: { object: JsonObject | null; oldObject: JsonObject | null } },
      which: 'object' | 'oldObject',
    ) => {
      (
        r.request[which] as { spec: { template: { spec: JsonObject } } }
      ).spec.template.spec.hostNetwork = true;
    };
    const update = edit(smcrReview('deployment-create'), (r) => {
      r.request.operation = 'UPDATE';
      r.request.oldObject = structuredClone(r.request.object);
      bad(r, 'object');
      bad(r, 'oldObject');
    });
    const res = (await post('/validate', update)).body.response;
    expect(res.allowed).toBe(true);
    expect((res.warnings as string[]).join()).toMatch(/already present before this update/);
    const introduced = edit(smcrReview('deployment-create'), (r) => {
      r.request.operation = 'UPDATE';
      r.request.oldObject = structuredClone(r.request.object);
      bad(r, 'object');
    });
    expect((await post('/validate', introduced)).body.response.allowed).toBe(false);
  });
});

describe('bad requests', () => {
  it.each([
    ['not JSON', 'this is not json', 400, 'REVIEW_NOT_JSON'],
    ['an empty body', '', 400, 'REVIEW_NOT_JSON'],
    ['a JSON array', '[]', 400, 'REVIEW_INVALID'],
    [
      'the wrong apiVersion',
      { apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', request: { uid: 'u' } },
      400,
      'REVIEW_INVALID',
    ],
    [
      'no request',
      { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
      400,
      'REVIEW_INVALID',
    ],
    [
      'no uid',
      {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { operation: 'CREATE', kind: { kind: 'Pod' } },
      },
      400,
      'REVIEW_INVALID',
    ],
    [
      'a bad operation',
      {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'u', operation: 'PATCH', kind: { kind: 'Pod' } },
      },
      400,
      'REVIEW_INVALID',
    ],
    [
      'a CREATE without object',
      {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'u', operation: 'CREATE', kind: { kind: 'Pod' } },
      },
      400,
      'REVIEW_INVALID',
    ],
    [
      'an envelope whose only extra is a "__proto__" key (dropped, so no request)',
      '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","__proto__":{"request":{"uid":"u"}}}',
      400,
      'REVIEW_INVALID',
    ],
  ])('answers %s with a clear 400', async (_name, body, status, code) => {
    const res = await post('/mutate', body);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ code, message: expect.any(String) });
  });

  it('answers an object of an unexpected kind with 400 naming the kind', async () => {
    const res = await post('/mutate', smcrReview('deployment-create'));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'REVIEW_UNSUPPORTED_KIND',
      message: expect.stringContaining('Deployment'),
    });
  });

  it('answers a non-JSON content type with 415', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/mutate',
      payload: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.statusCode).toBe(415);
  });

  it('accepts a 7 MiB UPDATE review and answers 413 above the limit', async () => {
    const big = 'x'.repeat(3.4 * 1024 * 1024);
    const review = edit(
      annotate(fixture('pod-update'), {
        'network.alibabacloud.com/erdma-smcr': 'true',
        filler: big,
      }),
      (r) => {
        ((
          r.request.oldObject as { metadata: { annotations: Record<string, string> } }
        ).metadata.annotations ??= {}).filler = big;
      },
    );
    const ok = await post('/mutate', review);
    expect(ok.status).toBe(200);
    const tooBig = await post(
      '/mutate',
      edit(review, (r) => {
        (
          r.request.object as { metadata: { annotations: Record<string, string> } }
        ).metadata.annotations.more = 'y'.repeat(2 * 1024 * 1024);
      }),
    );
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.code).toBe('BODY_TOO_LARGE');
  });

  it('answers unknown routes with 404', async () => {
    const res = await app.inject({ method: 'GET', url: '/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('operations endpoints', () => {
  it('answers /healthz and /readyz', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
      status: 'ready',
    });
  });

  it('counts requests, denials and patch sizes in /metrics', async () => {
    await post('/mutate', smcrReview('pod-create'));
    const text = await (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(
      /erdma_smcr_admission_requests_total\{endpoint="mutate",operation="CREATE",kind="Pod",verdict="allowed",dry_run="false"\} \d+/,
    );
    expect(text).toMatch(/erdma_smcr_admission_denials_total\{rule="host-network"\} [1-9]/);
    expect(text).toMatch(/erdma_smcr_admission_patch_bytes_count [1-9]/);
    expect(text).toMatch(/erdma_smcr_admission_bad_requests_total\{code="REVIEW_INVALID"\} [1-9]/);
    expect(metrics.registry.contentType).toMatch(/text\/plain/);
  });
});

describe('decision log', () => {
  it('writes one line per decision with uid, kind, verdict and rules, and no request objects or per-request noise', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'info' },
      { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
    );
    const t = testApp(view([node('good', GOOD_KERNEL)]), {}, logger);
    try {
      const ok = smcrReview('pod-create-by-replicaset-controller');
      const denied = edit(smcrReview('pod-create'), (r) => {
        (r.request.object as { spec: JsonObject }).spec.hostNetwork = true;
      });
      for (const review of [ok, denied]) {
        const res = await t.app.inject({
          method: 'POST',
          url: '/mutate',
          payload: review,
          headers: { 'content-type': 'application/json' },
        });
        expect(res.statusCode).toBe(200);
      }
      expect((await t.app.inject({ method: 'GET', url: '/nowhere' })).statusCode).toBe(404);
      const decisions = lines.filter((l) => l.msg === 'admission decision');
      expect(decisions).toHaveLength(2);
      expect(decisions[0]).toMatchObject({
        uid: (ok.request as { uid: string }).uid,
        kind: 'Pod',
        operation: 'CREATE',
        verdict: 'allowed',
        rules: [],
        name: expect.stringMatching(/\*$/) as unknown,
      });
      expect(decisions[1]).toMatchObject({ verdict: 'denied', rules: ['host-network'] });
      // fastify's own "incoming request"/"request completed"/route-not-found lines stay off.
      expect(lines.map((l) => l.msg)).toEqual(['admission decision', 'admission decision']);
      expect(JSON.stringify(lines)).not.toContain('containers');
    } finally {
      await t.app.close();
    }
  });
});
