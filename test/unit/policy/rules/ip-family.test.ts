// The ip-family rule (src/policy/rules/ip-family.ts).
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../../src/policy/evaluate.js';
import type { ClusterView, JsonObject } from '../../../../src/policy/types.js';
import { config, pod, unknownView, view } from '../../../helpers/policy.js';

function rulesOf(obj: JsonObject, v: ClusterView = unknownView): string[] {
  return evaluate(obj, v, config).denials.map((d) => d.rule);
}

describe('rule ip-family', () => {
  it('denies SMC-R in an IPv6-only cluster', () => {
    expect(rulesOf(pod(), view(undefined, { ipFamilies: ['IPv6'] }))).toEqual(['ip-family']);
  });

  it('warns in a dual-stack cluster that IPv6 stays on TCP', () => {
    const r = evaluate(pod(), view(undefined, { ipFamilies: ['IPv4', 'IPv6'] }), config);
    expect(r.allowed).toBe(true);
    expect(r.warnings.map((w) => w.message).join()).toMatch(/dual-stack/);
  });

  it('denies IPv6 nameservers when IPv6 will be turned off, and allows them with keep-ipv6', () => {
    const spec = { dnsPolicy: 'None', dnsConfig: { nameservers: ['10.0.0.10', 'fd00::a'] } };
    const denied = evaluate(pod({ spec }), unknownView, config);
    expect(denied.denials[0]).toMatchObject({
      rule: 'ip-family',
      path: 'spec.dnsConfig.nameservers',
    });
    const kept = evaluate(
      pod({ spec, annotations: { 'smcr.erdma.io/keep-ipv6': 'true' } }),
      unknownView,
      config,
    );
    expect(kept.allowed).toBe(true);
    expect(kept.warnings.map((w) => w.message).join()).toMatch(/IPv6 stays on/);
  });

  it('warns about IPv6 hostAliases', () => {
    const r = evaluate(
      pod({ spec: { hostAliases: [{ ip: '2001:db8::1', hostnames: ['x'] }] } }),
      unknownView,
      config,
    );
    expect(r.allowed).toBe(true);
    expect(r.warnings.map((w) => w.message).join()).toMatch(/IPv6 hostAliases/);
  });
});
