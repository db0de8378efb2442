// The host-network rule (src/policy/rules/host-network.ts).
import { describe, expect, it } from 'vitest';
import { SMCR_ANNOTATION } from '../../../../src/constants.js';
import { evaluate } from '../../../../src/policy/evaluate.js';
import { config, pod, unknownView, workload } from '../../../helpers/policy.js';

describe('rule host-network', () => {
  it('denies a hostNetwork pod that asks for SMC-R', () => {
    const r = evaluate(pod({ spec: { hostNetwork: true } }), unknownView, config);
    expect(r.denials).toEqual([
      expect.objectContaining({ rule: 'host-network', path: 'spec.hostNetwork' }),
    ]);
    expect(r.denials[0]?.message).toMatch(/Remove hostNetwork: true/);
  });

  // #80 item 11: the API server refuses a non-boolean hostNetwork; check passed it.
  it.each([
    ['"true"', 'true'],
    ['1', 1],
  ])('denies hostNetwork: %s (not a boolean)', (_, value) => {
    const r = evaluate(pod({ spec: { hostNetwork: value } }), unknownView, config);
    expect(r.denials).toEqual([
      expect.objectContaining({
        rule: 'host-network',
        message: expect.stringMatching(/hostNetwork must be true or false/),
      }),
    ]);
    expect(evaluate(pod({ spec: { hostNetwork: false } }), unknownView, config).allowed).toBe(true);
  });

  it.each(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'ReplicationController', 'Job'])(
    'denies a %s template with hostNetwork, pointing into spec.template',
    (kind) => {
      const r = evaluate(workload(kind, { hostNetwork: true }), unknownView, config);
      expect(r.denials[0]).toMatchObject({
        rule: 'host-network',
        path: 'spec.template.spec.hostNetwork',
      });
    },
  );

  it('points into spec.jobTemplate for a CronJob', () => {
    const r = evaluate(workload('CronJob', { hostNetwork: true }), unknownView, config);
    expect(r.denials[0]?.path).toBe('spec.jobTemplate.spec.template.spec.hostNetwork');
  });

  it('allows hostNetwork pods that do not ask for SMC-R', () => {
    expect(
      evaluate(
        pod({ annotations: { [SMCR_ANNOTATION]: 'false' }, spec: { hostNetwork: true } }),
        unknownView,
        config,
      ).allowed,
    ).toBe(true);
  });
});
