// The object-size rule (src/policy/rules/object-size.ts): pods larger than the webhook judges.
import { describe, expect, it } from 'vitest';
import { SMCR_ANNOTATION } from '../../../../src/constants.js';
import { evaluate } from '../../../../src/policy/evaluate.js';
import { MAX_ANNOTATION_BYTES } from '../../../../src/policy/rules/object-size.js';
import { PLACEMENT_LIMITS } from '../../../../src/policy/scheduling.js';
import {
  config,
  GOOD_KERNEL,
  node,
  OLD_KERNEL,
  pod,
  view,
  affinityPod,
} from '../../../helpers/policy.js';

describe('pods larger than the webhook judges', () => {
  it('refuses more node selector terms than the limit, saying how many and what is allowed, with no patch', () => {
    const terms = Array.from({ length: PLACEMENT_LIMITS.terms + 1 }, (_, i) => ({
      matchExpressions: [{ key: 'zone', operator: 'In', values: [`z${i}`] }],
    }));
    const r = evaluate(
      affinityPod(terms),
      view([node('good', GOOD_KERNEL, { zone: 'z1' })]),
      config,
    );
    expect(r).toMatchObject({ allowed: false, patch: [] });
    expect(r.denials).toEqual([
      {
        rule: 'object-size',
        path: 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms',
        message: expect.stringContaining(
          `hold ${PLACEMENT_LIMITS.terms + 1} terms, and the webhook judges at most ${PLACEMENT_LIMITS.terms}`,
        ) as unknown,
      },
    ]);
  });

  it('accepts exactly the limit of terms and mutates every one', () => {
    const terms = Array.from({ length: PLACEMENT_LIMITS.terms }, (_, i) => ({
      matchExpressions: [{ key: 'zone', operator: 'In', values: [`z${i}`] }],
    }));
    const r = evaluate(
      affinityPod(terms),
      view([node('good', GOOD_KERNEL, { zone: 'z1' })]),
      config,
    );
    expect(r.allowed).toBe(true);
    expect(r.patch.filter((o) => o.path.includes('nodeSelectorTerms')).length).toBe(
      PLACEMENT_LIMITS.terms,
    );
  });

  it('refuses more requirements or values than the limits, in a workload template too', () => {
    const many = Array.from({ length: PLACEMENT_LIMITS.requirements + 1 }, (_, i) => ({
      key: `k${i}`,
      operator: 'Exists',
    }));
    expect(
      evaluate(affinityPod([{ matchExpressions: many }]), view(), config).denials.map(
        (d) => d.rule,
      ),
    ).toEqual(['object-size']);
    const values = Array.from({ length: PLACEMENT_LIMITS.values + 1 }, (_, i) => `node-${i}`);
    const r = evaluate(
      affinityPod([{ matchFields: [{ key: 'metadata.name', operator: 'In', values }] }]),
      view(),
      config,
    );
    expect(r.denials[0]?.message).toContain(`${PLACEMENT_LIMITS.values + 1} values`);
    const selector = Object.fromEntries(
      Array.from({ length: PLACEMENT_LIMITS.requirements + 1 }, (_, i) => [`k${i}`, 'v']),
    );
    const deployment = {
      kind: 'Deployment',
      metadata: { name: 'd' },
      spec: {
        template: {
          metadata: { annotations: { [SMCR_ANNOTATION]: 'true' } },
          spec: { containers: [{ name: 'a' }], nodeSelector: selector },
        },
      },
    };
    expect(evaluate(deployment, view(), config).denials.map((d) => [d.rule, d.path])).toEqual([
      ['object-size', 'spec.template.spec.affinity.nodeAffinity'],
    ]);
  });

  it('refuses a pod whose constraints take more label comparisons against the nodes than one review may make', () => {
    // 100 terms of 10 requirements, each term failing only at its last: 1,000 comparisons per node.
    const terms = Array.from({ length: 100 }, (_, t) => ({
      matchExpressions: [
        ...Array.from({ length: 9 }, (_, i) => ({ key: `k${i}`, operator: 'Exists' })),
        { key: 'zone', operator: 'In', values: [`nowhere-${t}`] },
      ],
    }));
    const labels = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, 'v']));
    const nodes = Array.from({ length: PLACEMENT_LIMITS.checks / 1000 + 10 }, (_, i) =>
      node(`n${i}`, OLD_KERNEL, labels),
    );
    const started = process.hrtime.bigint();
    const r = evaluate(affinityPod(terms), view(nodes), config);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    expect(r.denials.map((d) => d.rule)).toEqual(['object-size']);
    expect(r.denials[0]?.message).toContain(
      `against the ${nodes.length} nodes of the cluster takes more than ${PLACEMENT_LIMITS.checks} label comparisons`,
    );
    // The bound is in comparisons, not time; this only shows it holds the loop for a fraction of a second.
    expect(ms).toBeLessThan(2_000);
  });

  it('still finds the one usable node among thousands without reading the rest', () => {
    const nodes = [
      ...Array.from({ length: 20_000 }, (_, i) => node(`old-${i}`, OLD_KERNEL, { zone: 'a' })),
      node('good', GOOD_KERNEL, { zone: 'b' }),
    ];
    const v = view(nodes);
    const pinned = affinityPod([
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
    ]);
    expect(evaluate(pinned, v, config)).toMatchObject({ allowed: true });
    expect(evaluate(pod(), v, config)).toMatchObject({ allowed: true });
    const nowhere = evaluate(
      affinityPod([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }]),
      v,
      config,
    );
    expect(nowhere.denials[0]?.message).toContain('and 19995 more');
  });

  it('refuses an SMC-R pod whose annotations exceed what the API server stores, before copying them', () => {
    const annotations: Record<string, string> = {};
    for (let i = 0; i < 20_000; i++) annotations[`example.com/key-${i}`] = 'v'.repeat(10);
    const r = evaluate(pod({ annotations }), view(), config);
    expect(r.denials).toEqual([
      {
        rule: 'object-size',
        path: 'metadata.annotations',
        message: expect.stringContaining(
          `the API server allows at most ${MAX_ANNOTATION_BYTES}`,
        ) as unknown,
      },
    ]);
    // Just under the limit is judged as usual.
    const fits: Record<string, string> = {
      'example.com/big': 'x'.repeat(MAX_ANNOTATION_BYTES - 200),
    };
    expect(evaluate(pod({ annotations: fits }), view(), config).allowed).toBe(true);
  });
});
