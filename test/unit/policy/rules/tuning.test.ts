// The tuning rule (src/policy/rules/tuning.ts).
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../../src/policy/evaluate.js';
import type { ClusterView, JsonObject } from '../../../../src/policy/types.js';
import { config, pod, unknownView } from '../../../helpers/policy.js';

function rulesOf(obj: JsonObject, v: ClusterView = unknownView): string[] {
  return evaluate(obj, v, config).denials.map((d) => d.rule);
}

describe('rule tuning', () => {
  it.each([
    ['smcr.erdma.io/wmem', '16383', /outside 16384\.\.1073741823/],
    ['smcr.erdma.io/rmem', '1073741824', /outside/],
    ['smcr.erdma.io/rmem', '64K', /whole number/],
    ['smcr.erdma.io/buf-type', '3', /outside 0\.\.2/],
    ['smcr.erdma.io/buf-type', '-1', /whole number/],
    ['smcr.erdma.io/testlink-time', '9999999', /outside 0\.\.2147483/],
    ['smcr.erdma.io/autocorking-size', '4294967296', /outside/],
    ['smcr.erdma.io/keep-ipv6', 'maybe', /"true" or "false"/],
  ])('denies %s=%s with the range', (key, value, message) => {
    const r = evaluate(pod({ annotations: { [key]: value } }), unknownView, config);
    expect(r.denials).toHaveLength(1);
    expect(r.denials[0]).toMatchObject({ rule: 'tuning', path: `metadata.annotations[${key}]` });
    expect(r.denials[0]?.message).toMatch(message);
  });

  it.each([
    ['smcr.erdma.io/wmem', '16384'],
    ['smcr.erdma.io/rmem', '1073741823'],
    ['smcr.erdma.io/autocorking-size', '0'],
    ['smcr.erdma.io/autocorking-size', '4294967295'],
    ['smcr.erdma.io/buf-type', '0'],
    ['smcr.erdma.io/testlink-time', '0'],
  ])('accepts the boundary %s=%s', (key, value) => {
    expect(rulesOf(pod({ annotations: { [key]: value } }))).toEqual([]);
  });

  it('warns that SMC-R caps buffers above 512 KiB', () => {
    const r = evaluate(
      pod({ annotations: { 'smcr.erdma.io/wmem': '1048576' } }),
      unknownView,
      config,
    );
    expect(r.allowed).toBe(true);
    expect(r.warnings.map((w) => w.message).join()).toMatch(/at most 524288/);
  });
});
