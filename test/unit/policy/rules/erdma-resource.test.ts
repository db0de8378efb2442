// The erdma-resource rule (src/policy/rules/erdma-resource.ts).
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../../src/policy/evaluate.js';
import type { ClusterView, JsonObject } from '../../../../src/policy/types.js';
import { config, pod, unknownView } from '../../../helpers/policy.js';

function rulesOf(obj: JsonObject, v: ClusterView = unknownView): string[] {
  return evaluate(obj, v, config).denials.map((d) => d.rule);
}

describe('rule erdma-resource', () => {
  const res = (resources: JsonObject, field = 'containers'): JsonObject => ({
    [field]: [{ name: 'app', image: 'x', resources }],
  });

  it.each([
    ['requests without limits', { requests: { 'aliyun/erdma': '1' } }, /without a limit/],
    [
      'requests different from limits',
      { requests: { 'aliyun/erdma': '1' }, limits: { 'aliyun/erdma': '2' } },
      /differ from limits/,
    ],
    [
      '0 everywhere',
      { requests: { 'aliyun/erdma': '0' }, limits: { 'aliyun/erdma': '0' } },
      /sets aliyun\/erdma to 0/,
    ],
    ['a fractional count', { limits: { 'aliyun/erdma': '500m' } }, /whole number/],
  ])('denies %s', (_name, resources, message) => {
    const r = evaluate(pod({ spec: res(resources) }), unknownView, config);
    expect(r.denials[0]?.rule).toBe('erdma-resource');
    expect(r.denials[0]?.message).toMatch(message);
  });

  it('checks init containers too', () => {
    const r = evaluate(
      pod({
        spec: {
          ...res({ requests: { 'aliyun/erdma': 1 } }, 'initContainers'),
          containers: [{ name: 'a' }],
        },
      }),
      unknownView,
      config,
    );
    expect(r.denials[0]?.path).toBe('spec.initContainers[0].resources.limits[aliyun/erdma]');
  });

  it('allows limits alone and numeric values equal to requests', () => {
    expect(rulesOf(pod({ spec: res({ limits: { 'aliyun/erdma': '1' } }) }))).toEqual([]);
    expect(
      rulesOf(
        pod({ spec: res({ limits: { 'aliyun/erdma': 2 }, requests: { 'aliyun/erdma': '2' } }) }),
      ),
    ).toEqual([]);
  });
});
