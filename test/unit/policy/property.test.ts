// Property-based tests: random and hostile pods never crash the policy, patches always apply,
// and mutation is idempotent.
import fc from 'fast-check';
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { SMCR_ANNOTATION, TUNING_ANNOTATIONS } from '../../../src/constants.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import type { JsonObject, NodeFacts } from '../../../src/policy/types.js';
import { config, GOOD_KERNEL, node, OLD_KERNEL, view } from '../../helpers/policy.js';

const views = fc.constantFrom(
  view(),
  view([node('a', GOOD_KERNEL, { z: '1' }), node('b', OLD_KERNEL, { z: '2' })]),
  view([node('a', OLD_KERNEL, { z: '1' }), node('b', OLD_KERNEL, { toString: '2' })]),
  view(undefined, { driverMode: 'ofed' }),
  view(undefined, { ipFamilies: ['IPv4', 'IPv6'] }),
);

const annotationValue = fc.oneof(
  fc.constantFrom('true', 'false', '1', '0', 'T', 'yes', ''),
  fc.string(),
);
const tuningValue = fc.oneof(
  fc.nat().map(String),
  fc.string(),
  fc.constantFrom('16384', '2', '-1', '1e9'),
);
// Keys named like JavaScript built-ins too: no lookup may find an inherited property (#37).
const key = fc.constantFrom(
  'z',
  'pool',
  'kubernetes.io/hostname',
  'smcr.erdma.io/capable',
  'toString',
  'constructor',
  'valueOf',
  'hasOwnProperty',
);
const requirement = fc.record({
  key,
  operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Bogus'),
  values: fc.array(fc.constantFrom('1', '2', 'true', 'x'), { maxLength: 3 }),
});
const term = fc.record(
  { matchExpressions: fc.array(requirement, { maxLength: 3 }) },
  { requiredKeys: [] },
);
const quantity = fc.oneof(fc.constantFrom('0', '1', '2', '500m'), fc.nat(3), fc.string());
const container = fc.record(
  {
    name: fc.constantFrom('a', 'b', 'c'),
    image: fc.constant('x'),
    resources: fc.record(
      {
        limits: fc.dictionary(fc.constantFrom('aliyun/erdma', 'cpu'), quantity),
        requests: fc.dictionary(fc.constantFrom('aliyun/erdma', 'cpu'), quantity),
      },
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
      affinity: fc.record(
        {
          nodeAffinity: fc.record(
            {
              requiredDuringSchedulingIgnoredDuringExecution: fc.record({
                nodeSelectorTerms: fc.array(term, { maxLength: 3 }),
              }),
            },
            { requiredKeys: [] },
          ),
        },
        { requiredKeys: [] },
      ),
      dnsConfig: fc.record({
        nameservers: fc.array(fc.constantFrom('10.0.0.1', 'fd00::1'), { maxLength: 2 }),
      }),
    },
    { requiredKeys: [] },
  ),
});

/** The verdict computed by brute force over the view's nodes, as the scheduler reads a pod's constraints. */
function mayLandOnGood(p: JsonObject, nodes: readonly NodeFacts[]): boolean {
  const spec = (p.spec ?? {}) as JsonObject;
  const label = (n: NodeFacts, k: string): string | undefined =>
    Object.hasOwn(n.labels, k) ? n.labels[k] : undefined;
  const nodeName =
    typeof spec.nodeName === 'string' && spec.nodeName !== '' ? spec.nodeName : undefined;
  const selector = Object.entries((spec.nodeSelector ?? {}) as Record<string, string>);
  type Req = { key: string; operator: string; values: string[] };
  const terms = ((
    ((spec.affinity as JsonObject | undefined)?.nodeAffinity as JsonObject | undefined)
      ?.requiredDuringSchedulingIgnoredDuringExecution as JsonObject | undefined
  )?.nodeSelectorTerms ?? []) as { matchExpressions?: Req[] }[];
  const own = (r: Req): boolean => r.key === 'smcr.erdma.io/capable';
  const userTerms = terms.some((t) => (t.matchExpressions ?? []).some((r) => !own(r))) ? terms : [];
  const one = (v: string | undefined, r: Req): boolean =>
    r.operator === 'In'
      ? v !== undefined && r.values.includes(v)
      : r.operator === 'NotIn'
        ? v === undefined || !r.values.includes(v)
        : r.operator === 'Exists'
          ? v !== undefined
          : r.operator === 'DoesNotExist'
            ? v === undefined
            : r.operator === 'Gt' || r.operator === 'Lt'
              ? (() => {
                  const a = Number.parseInt(v ?? '', 10);
                  const b = Number.parseInt(r.values[0] ?? '', 10);
                  return (
                    !Number.isNaN(a) && !Number.isNaN(b) && (r.operator === 'Gt' ? a > b : a < b)
                  );
                })()
              : false;
  const termOk = (t: { matchExpressions?: Req[] }, n: NodeFacts): boolean =>
    (t.matchExpressions ?? []).length > 0 &&
    (t.matchExpressions ?? []).filter((r) => !own(r)).every((r) => one(label(n, r.key), r));
  return nodes.some(
    (n) =>
      n.kernelVersion === GOOD_KERNEL &&
      (nodeName === undefined || n.name === nodeName) &&
      selector.every(([k, v]) => label(n, k) === v) &&
      (userTerms.length === 0 || userTerms.some((t) => termOk(t, n))),
  );
}

describe('policy properties', () => {
  it('judges placement as a brute-force reading of the constraints does, built-in key names included', () => {
    const nodes = [
      node('a', GOOD_KERNEL, { z: '1', toString: 'x' }),
      node('b', OLD_KERNEL, { z: '2' }),
      node('c', GOOD_KERNEL, { constructor: '1', pool: '2' }),
    ];
    const v = view(nodes);
    fc.assert(
      fc.property(podArb, (p) => {
        const spec = (p.spec ?? {}) as JsonObject;
        const clean = {
          ...p,
          metadata: { annotations: { [SMCR_ANNOTATION]: 'true' } },
          spec: {
            containers: [{ name: 'a' }],
            ...(spec.nodeName ? { nodeName: spec.nodeName } : {}),
            ...(spec.nodeSelector ? { nodeSelector: spec.nodeSelector } : {}),
            ...(spec.affinity ? { affinity: spec.affinity } : {}),
          },
        };
        const r = evaluate(clean, v, config);
        const denied = r.denials.some((d) => d.rule === 'node-eligibility');
        if (mayLandOnGood(clean, nodes)) expect(denied).toBe(false);
        else
          expect(
            denied || r.warnings.some((w) => w.message.startsWith('no known node matches')),
          ).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

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
    // What was drawn: the property says nothing if every pod was denied, or none was patched (#101).
    let allowed = 0;
    let patched = 0;
    fc.assert(
      fc.property(podArb, views, (p, v) => {
        const first = evaluate(p, v, config);
        expect(first.allowed).toBe(first.denials.length === 0);
        if (!first.allowed) {
          expect(first.patch).toEqual([]);
          return;
        }
        allowed += 1;
        if (first.patch.length > 0) patched += 1;
        const out = fastJsonPatch.applyPatch(
          structuredClone(p) as JsonObject,
          structuredClone([...first.patch]),
          true,
          false,
        ).newDocument;
        const second = evaluate(out, v, config);
        expect(second.patch).toEqual([]);
        expect(second.allowed).toBe(true);
      }),
      { numRuns: 1500 },
    );
    console.log(`property: 1500 pods drawn, ${allowed} allowed, ${patched} of them patched`);
    expect(allowed).toBeGreaterThan(100);
    expect(patched).toBeGreaterThan(50);
  });
});
