// The container rule (src/policy/rules/container.ts).
import { describe, expect, it } from 'vitest';
import { CONTAINER_ANNOTATION } from '../../../../src/constants.js';
import { evaluate } from '../../../../src/policy/evaluate.js';
import { config, pod, unknownView, workload } from '../../../helpers/policy.js';

const twoContainers = { containers: [{ name: 'app' }, { name: 'sidecar' }] };

describe('rule container', () => {
  it('allows a name the pod has, and a pod that names none', () => {
    for (const p of [
      pod({ annotations: { [CONTAINER_ANNOTATION]: 'sidecar' }, spec: twoContainers }),
      pod({ spec: twoContainers }),
    ])
      expect(evaluate(p, unknownView, config).allowed).toBe(true);
  });

  it('allows a native sidecar (an init container with restartPolicy Always), not another init container', () => {
    const spec = (restartPolicy?: string): Record<string, unknown> => ({
      containers: [{ name: 'app' }],
      initContainers: [{ name: 'proxy', ...(restartPolicy ? { restartPolicy } : {}) }],
    });
    const named = { [CONTAINER_ANNOTATION]: 'proxy' };
    expect(
      evaluate(pod({ annotations: named, spec: spec('Always') }), unknownView, config).allowed,
    ).toBe(true);
    expect(
      evaluate(pod({ annotations: named, spec: spec() }), unknownView, config).denials,
    ).toEqual([expect.objectContaining({ rule: 'container' })]);
  });

  it('refuses a name the pod lacks, at the annotation, naming the containers there are', () => {
    const r = evaluate(
      pod({ annotations: { [CONTAINER_ANNOTATION]: 'web' }, spec: twoContainers }),
      unknownView,
      config,
    );
    expect(r.allowed).toBe(false);
    expect(r.patch).toEqual([]);
    expect(r.denials).toEqual([
      {
        rule: 'container',
        path: `metadata.annotations[${CONTAINER_ANNOTATION}]`,
        message: `${CONTAINER_ANNOTATION} names container "web", which the pod does not have (containers and native sidecars: app, sidecar).`,
      },
    ]);
  });

  it('judges a workload template at its own path, and clips a name past 64 characters', () => {
    const long = 'x'.repeat(300);
    const r = evaluate(
      workload('Deployment', twoContainers, {
        'network.alibabacloud.com/erdma-smcr': 'true',
        [CONTAINER_ANNOTATION]: long,
      }),
      unknownView,
      config,
    );
    expect(r.denials.map((d) => [d.rule, d.path])).toEqual([
      ['container', `spec.template.metadata.annotations[${CONTAINER_ANNOTATION}]`],
    ]);
    expect(r.denials[0]!.message.length).toBeLessThan(300);
  });
});
