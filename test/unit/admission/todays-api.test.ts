// What the API of Kubernetes 1.35+ sends that 1.20's could not, from the reviews captured from a
// real 1.37.2 API server (test/fixtures/apiserver-v1.37.2): a pod with a native sidecar, one with
// pod-level resources, and an in-place resize (the pods/resize subresource).
import { afterAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/policy/types.js';
import { GOOD_KERNEL, node, view } from '../../helpers/policy.js';
import { applyResponse, fixture, smcrReview, testApp } from '../../helpers/reviews.js';

const { app } = testApp(view([node('good', GOOD_KERNEL)]));
afterAll(() => app.close());

interface Container {
  name: string;
  restartPolicy?: string;
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
}
type Pod = JsonObject & {
  metadata: { annotations?: Record<string, string> };
  spec: { containers: Container[]; initContainers?: Container[]; resources?: unknown };
};

async function mutate(review: JsonObject): Promise<{ response: Record<string, unknown> }> {
  const res = await app.inject({
    method: 'POST',
    url: '/mutate',
    payload: JSON.stringify(review),
    headers: { 'content-type': 'application/json' },
  });
  expect(res.statusCode).toBe(200);
  return res.json() as { response: Record<string, unknown> };
}

describe('reviews of today’s API, captured from kube-apiserver 1.37.2', () => {
  it('the captures are what their names say', () => {
    const sidecar = fixture('pod-create-native-sidecar') as { request: { object: Pod } };
    expect(sidecar.request.object.spec.initContainers?.[0]?.restartPolicy).toBe('Always');
    const podLevel = fixture('pod-create-pod-level-resources') as { request: { object: Pod } };
    expect(podLevel.request.object.spec.resources).toMatchObject({ limits: { cpu: '200m' } });
    const resize = fixture('pod-update-resize') as { request: { subResource?: string } };
    expect(resize.request.subResource).toBe('resize');
  });

  it('an annotated pod with a native sidecar: the device goes to the first app container by default', async () => {
    const review = smcrReview('pod-create-native-sidecar');
    const { response } = await mutate(review);
    expect(response.allowed).toBe(true);
    const pod = applyResponse(review, response as { patch?: string }) as Pod;
    expect(pod.spec.containers[0]!.resources?.limits?.['aliyun/erdma']).toBe('1');
    expect(pod.spec.initContainers?.[0]!.resources?.limits?.['aliyun/erdma']).toBeUndefined();
  });

  it('smcr.erdma.io/container may name the native sidecar: it gets the device, the app container none', async () => {
    const review = smcrReview('pod-create-native-sidecar', {
      'smcr.erdma.io/container': 'sidecar',
    });
    const { response } = await mutate(review);
    expect(response.allowed, JSON.stringify(response.status)).toBe(true);
    const pod = applyResponse(review, response as { patch?: string }) as Pod;
    expect(pod.spec.initContainers?.[0]!.resources).toEqual({
      limits: { 'aliyun/erdma': '1' },
      requests: { 'aliyun/erdma': '1' },
    });
    expect(pod.spec.containers[0]!.resources?.limits?.['aliyun/erdma']).toBeUndefined();
    expect(pod.metadata.annotations?.['smcr.erdma.io/settings']).toMatch(/"version":1/);
  });

  it('an init container that is not a sidecar cannot be named: it ends before the app runs (the negative control)', async () => {
    const review = smcrReview('pod-create-native-sidecar', {
      'smcr.erdma.io/container': 'sidecar',
    });
    const obj = (review as { request: { object: Pod } }).request.object;
    delete obj.spec.initContainers![0]!.restartPolicy;
    const { response } = await mutate(review);
    expect(response.allowed).toBe(false);
    expect((response.status as { message: string }).message).toMatch(
      /\[container\] .*names container "sidecar", which the pod does not have \(containers and native sidecars: c\)/,
    );
  });

  it('an annotated pod with pod-level resources: mutated, its spec.resources kept as the API server stored them', async () => {
    const review = smcrReview('pod-create-pod-level-resources');
    const before = structuredClone(
      (review as { request: { object: Pod } }).request.object.spec.resources,
    );
    const { response } = await mutate(review);
    expect(response.allowed).toBe(true);
    const pod = applyResponse(review, response as { patch?: string }) as Pod;
    expect(pod.spec.resources).toEqual(before);
    expect(pod.spec.containers[0]!.resources?.limits?.['aliyun/erdma']).toBe('1');
  });

  it('a resize of an annotated pod is neither refused nor changed: the subresource is not ours', async () => {
    const review = smcrReview('pod-update-resize');
    const { response } = await mutate(review);
    expect(response).toMatchObject({ allowed: true });
    expect(response.patch).toBeUndefined();
  });
});
