// The policy as a whole: pods without the annotation, workload templates.
import { describe, expect, it } from 'vitest';
import { SMCR_ANNOTATION } from '../../../src/constants.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import type { ClusterView, JsonObject } from '../../../src/policy/types.js';
import { config, pod, unknownView, workload } from '../../helpers/policy.js';

function rulesOf(obj: JsonObject, v: ClusterView = unknownView): string[] {
  return evaluate(obj, v, config).denials.map((d) => d.rule);
}

describe('pods without the annotation', () => {
  it('leaves a pod without the annotation untouched, with no patch', () => {
    const p = pod();
    delete (p.metadata as { annotations?: unknown }).annotations;
    const r = evaluate(p, unknownView, config);
    expect(r).toMatchObject({ allowed: true, untouched: true, smcr: false, patch: [] });
  });

  it('ignores kinds that carry no pod', () => {
    expect(
      evaluate({ kind: 'Service', metadata: { name: 's' } }, unknownView, config).untouched,
    ).toBe(true);
    expect(evaluate('not an object', unknownView, config).untouched).toBe(true);
    expect(evaluate(null, unknownView, config).untouched).toBe(true);
  });
});

describe('workload templates', () => {
  it('validates but never mutates a workload', () => {
    const r = evaluate(workload('Deployment', {}), unknownView, config);
    expect(r).toMatchObject({ allowed: true, smcr: true, patch: [] });
    expect(r.mutated).toBeUndefined();
  });

  it('warns when the annotation sits on the workload metadata instead of its template', () => {
    const w = workload('Deployment', {}, {});
    (w.metadata as JsonObject).annotations = { [SMCR_ANNOTATION]: 'true' };
    const r = evaluate(w, unknownView, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings[0]).toEqual({
      rule: 'annotation-placement',
      message: expect.stringMatching(/spec\.template\.metadata\.annotations/),
    });
  });

  it('reports every failing rule, not only the first', () => {
    const w = workload(
      'Deployment',
      { hostNetwork: true },
      { [SMCR_ANNOTATION]: 'true', 'smcr.erdma.io/wmem': '1' },
    );
    expect(rulesOf(w)).toEqual(['host-network', 'tuning']);
  });
});
