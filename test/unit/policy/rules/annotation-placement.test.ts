// The annotation-placement rule (src/policy/rules/annotation-placement.ts; the checks in
// src/policy/hints.ts): misspelled and misplaced keys warn under its own id, not annotation-value's,
// whose fix ("write true or false") would be the wrong advice for them (#102).
import { describe, expect, it } from 'vitest';
import { SMCR_ANNOTATION } from '../../../../src/constants.js';
import { evaluate } from '../../../../src/policy/evaluate.js';
import { RULE_CATALOGUE } from '../../../../src/policy/catalogue.js';
import type { JsonObject } from '../../../../src/policy/types.js';
import { config, pod, unknownView, workload } from '../../../helpers/policy.js';

describe('rule annotation-placement', () => {
  it.each([
    ['a misspelled key of ours', pod({ annotations: { 'smcr.erdma.io/connect-port': '6379' } })],
    [
      "a key of ours on a Deployment's own metadata",
      ((): JsonObject => {
        const d = workload('Deployment', {});
        (d.metadata as JsonObject).annotations = { 'smcr.erdma.io/listen-ports': '80' };
        return d;
      })(),
    ],
    [
      "the SMC-R annotation on a Deployment's own metadata only",
      ((): JsonObject => {
        const d = workload('Deployment', {}, {});
        (d.metadata as JsonObject).annotations = { [SMCR_ANNOTATION]: 'true' };
        return d;
      })(),
    ],
  ])('warns %s under its own id, and denies nothing', (_what, obj) => {
    const r = evaluate(obj, unknownView, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings.length).toBeGreaterThan(0);
    expect(r.warnings.map((w) => w.rule)).toEqual(r.warnings.map(() => 'annotation-placement'));
  });

  it('its fix says to rename or move the key, not to write "true" or "false"', () => {
    const rule = RULE_CATALOGUE.find((x) => x.id === 'annotation-placement');
    expect(rule?.fix).toMatch(/rename or move/);
    expect(rule?.fix).not.toMatch(/"true"/);
  });
});
