// Property-based tests: random and hostile pods never crash the policy, patches always apply,
// and mutation is idempotent.
import fc from 'fast-check';
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { SMCR_ANNOTATION, TUNING_ANNOTATIONS } from '../../src/constants.js';
import { evaluate } from '../../src/policy/evaluate.js';
import type { JsonObject } from '../../src/policy/types.js';
import { config, GOOD_KERNEL, node, OLD_KERNEL, view } from '../helpers/policy.js';

const views = fc.constantFrom(
  view(),
  view([node('a', GOOD_KERNEL, { z: '1' }), node('b', OLD_KERNEL, { z: '2' })]),
  view(undefined, { driverMode: 'ofed' }),
  view(undefined, { ipFamilies: ['IPv4', 'IPv6'] }),
);

const annotationValue = fc.oneof(fc.constantFrom('true', 'false', '1', '0', 'T', 'yes', ''), fc.string());
const tuningValue = fc.oneof(fc.nat().map(String), fc.string(), fc.constantFrom('16384', '2', '-1', '1e9'));
const key = fc.constantFrom('z', 'pool', 'kubernetes.io/hostname', 'smcr.erdma.io/capable');
const requirement = fc.record({
  key,
  operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Bogus'),
  values: fc.array(fc.constantFrom('1', '2', 'true', 'x'), { maxLength: 3 }),
});
const term = fc.record({ matchExpressions: fc.array(requirement, { maxLength: 3 }) }, { requiredKeys: [] });
const quantity = fc.oneof(fc.constantFrom('0', '1', '2', '500m'), fc.nat(3), fc.string());
const container = fc.record(
  {
    name: fc.constantFrom('a', 'b', 'c'),
    image: fc.constant('x'),
    resources: fc.record(
      { limits: fc.dictionary(fc.constantFrom('aliyun/erdma', 'cpu'), quantity), requests: fc.dictionary(fc.constantFrom('aliyun/erdma', 'cpu'), quantity) },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['name'] },
);

const podArb = fc.record({
  apiVersion: fc.constant('v1'),
  kind: fc.constant('Pod'),
  metadata: fc.record(
    {
      name: fc.string(),
      annotations: fc.record(
        {
          [SMCR_ANNOTATION]: annotationValue,
          [TUNING_ANNOTATIONS.wmem]: tuningValue,
          [TUNING_ANNOTATIONS.bufType]: tuningValue,
          [TUNING_ANNOTATIONS.keepIPv6]: annotationValue,
          'smcr.erdma.io/container': fc.constantFrom('a', 'b', 'zzz'),
          'smcr.erdma.io/settings': fc.string(),
        },
        { requiredKeys: [SMCR_ANNOTATION] },
      ),
    },
    { requiredKeys: ['annotations'] },
  ),
  spec: fc.record(
    {
      containers: fc.array(container, { maxLength: 3 }),
      initContainers: fc.array(container, { maxLength: 1 }),
      hostNetwork: fc.boolean(),
      nodeName: fc.constantFrom('a', 'b', 'c'),
      nodeSelector: fc.dictionary(key, fc.constantFrom('1', '2')),
      affinity: fc.record({
        nodeAffinity: fc.record({
          requiredDuringSchedulingIgnoredDuringExecution: fc.record({ nodeSelectorTerms: fc.array(term, { maxLength: 3 }) }),
        }, { requiredKeys: [] }),
      }, { requiredKeys: [] }),
      dnsConfig: fc.record({ nameservers: fc.array(fc.constantFrom('10.0.0.1', 'fd00::1'), { maxLength: 2 }) }),
    },
    { requiredKeys: [] },
  ),
});

describe('policy properties', () => {
  it('never throws on arbitrary JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), views, (value, v) => {
        evaluate(value, v, config);
        evaluate({ kind: 'Pod', metadata: value, spec: value }, v, config);
        evaluate({ kind: 'Deployment', spec: { template: value } }, v, config);
      }),
      { numRuns: 2000 },
    );
  });

  it('returns a patch that applies to the pod, and applying the policy again yields no patch', () => {
    fc.assert(
      fc.property(podArb, views, (p, v) => {
        const first = evaluate(p, v, config);
        expect(first.allowed).toBe(first.denials.length === 0);
        if (!first.allowed) {
          expect(first.patch).toEqual([]);
          return;
        }
        const out = fastJsonPatch.applyPatch(structuredClone(p) as JsonObject, structuredClone([...first.patch]), true, false).newDocument;
        const second = evaluate(out, v, config);
        expect(second.patch).toEqual([]);
        expect(second.allowed).toBe(true);
      }),
      { numRuns: 1500 },
    );
  });
});
