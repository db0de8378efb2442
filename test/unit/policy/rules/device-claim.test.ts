// The device-claim rule (src/policy/rules/device-claim.ts) and what it changes in the mutation:
// a pod that names its DRA claim gets no aliyun/erdma injected (#86 item 5).
import { describe, expect, it } from 'vitest';
import { DEVICE_CLAIM_ANNOTATION } from '../../../../src/constants.js';
import { evaluate } from '../../../../src/policy/evaluate.js';
import { config, pod, unknownView } from '../../../helpers/policy.js';

const withClaim = (used = 'erdma') => ({
  resourceClaims: [{ name: 'erdma', resourceClaimTemplateName: 'smc-erdma-numa0' }],
  containers: [{ name: 'app', resources: { claims: [{ name: used }] } }],
});

const injected = (r: ReturnType<typeof evaluate>): boolean =>
  /aliyun(\/|~1)erdma/.test(JSON.stringify(r.patch));

describe('rule device-claim', () => {
  it('takes the device from the named claim: no aliyun/erdma injected, no warning', () => {
    const r = evaluate(
      pod({ annotations: { [DEVICE_CLAIM_ANNOTATION]: 'erdma' }, spec: withClaim() }),
      unknownView,
      config,
    );
    expect(r.allowed).toBe(true);
    expect(injected(r)).toBe(false);
    expect(r.warnings.map((w) => w.message).join('\n')).not.toMatch(/ResourceClaims/);
  });

  it('warns a pod whose containers use claims and names none, and injects aliyun/erdma as before', () => {
    const r = evaluate(pod({ spec: withClaim() }), unknownView, config);
    expect(r.allowed).toBe(true);
    expect(injected(r)).toBe(true);
    expect(r.warnings).toContainEqual({
      rule: 'device-claim',
      message: expect.stringMatching(
        /use ResourceClaims \(erdma\) and smcr\.erdma\.io\/device-claim names none/,
      ),
    });
  });

  it('refuses a name spec.resourceClaims lacks, and a claim no container uses', () => {
    const missing = evaluate(
      pod({ annotations: { [DEVICE_CLAIM_ANNOTATION]: 'gpu' }, spec: withClaim() }),
      unknownView,
      config,
    );
    expect(missing.denials).toEqual([
      expect.objectContaining({
        rule: 'device-claim',
        message: expect.stringMatching(
          /names claim "gpu", which spec.resourceClaims does not have \(erdma\)/,
        ),
      }),
    ]);
    const unused = evaluate(
      pod({ annotations: { [DEVICE_CLAIM_ANNOTATION]: 'erdma' }, spec: withClaim('other') }),
      unknownView,
      config,
    );
    expect(unused.denials).toEqual([
      expect.objectContaining({
        rule: 'device-claim',
        message: expect.stringMatching(/no container uses/),
      }),
    ]);
  });

  it('leaves a pod without claims alone', () => {
    const r = evaluate(pod({}), unknownView, config);
    expect(r.warnings.map((w) => w.message).join('\n')).not.toMatch(/ResourceClaims/);
    expect(injected(r)).toBe(true);
  });
});
