// The annotation-value rule (src/policy/rules/annotation-value.ts).
import { describe, expect, it } from 'vitest';
import { SETTINGS_ANNOTATION, SMCR_ANNOTATION } from '../../../../src/constants.js';
import { evaluate } from '../../../../src/policy/evaluate.js';
import { config, pod, unknownView, workload } from '../../../helpers/policy.js';

describe('rule annotation-value', () => {
  it.each(['yes', 'on', '', 'enabled', 'TRUE '])(
    'denies the value %j with the accepted spellings',
    (value) => {
      const r = evaluate(pod({ annotations: { [SMCR_ANNOTATION]: value } }), unknownView, config);
      expect(r.allowed).toBe(false);
      expect(r.denials[0]).toMatchObject({
        rule: 'annotation-value',
        path: `metadata.annotations[${SMCR_ANNOTATION}]`,
      });
      expect(r.denials[0]?.message).toContain('"true" or "false"');
    },
  );

  it.each([
    [true, 'a YAML boolean', '("true")'],
    [262144, 'a YAML number', '("262144")'],
    [null, 'null', ''],
    [{ on: 'yes' }, 'a map', ''],
  ])(
    'denies the unquoted YAML value %j: the API server accepts only strings',
    (value, kind, quoted) => {
      const key = 'smcr.erdma.io/wmem';
      const r = evaluate(
        pod({
          annotations: { [SMCR_ANNOTATION]: 'true', [key]: value } as unknown as Record<
            string,
            string
          >,
        }),
        unknownView,
        config,
      );
      expect(r).toMatchObject({ allowed: false, patch: [] });
      expect(r.denials).toEqual([
        {
          rule: 'annotation-value',
          path: `metadata.annotations[${key}]`,
          message: expect.stringContaining(
            `${key} is ${kind}, but annotation values must be strings`,
          ) as unknown,
        },
      ]);
      expect(r.denials[0]?.message).toContain(`quote it${quoted ? ` ${quoted}` : ''};`);
    },
  );

  it('denies an unquoted `true` on the SMC-R annotation itself, in a workload template too, and ignores other keys', () => {
    const unquoted = { [SMCR_ANNOTATION]: true, 'example.com/other': 42 } as unknown as Record<
      string,
      string
    >;
    const r = evaluate(workload('Deployment', {}, unquoted), unknownView, config);
    expect(r.denials.map((d) => [d.rule, d.path])).toEqual([
      ['annotation-value', `spec.template.metadata.annotations[${SMCR_ANNOTATION}]`],
    ]);
    expect(r.denials[0]?.message).toContain('quote it ("true")');
  });

  it.each(['1', 'T', 'True', 'TRUE'])(
    'accepts %j as true with a warning to write "true"',
    (value) => {
      const r = evaluate(pod({ annotations: { [SMCR_ANNOTATION]: value } }), unknownView, config);
      expect(r.allowed).toBe(true);
      expect(r.smcr).toBe(true);
      expect(r.warnings.map((w) => w.message).join('\n')).toContain('write "true"');
    },
  );

  it('accepts "0" as false, warns, and strips a webhook-owned settings annotation', () => {
    const r = evaluate(
      pod({ annotations: { [SMCR_ANNOTATION]: '0', [SETTINGS_ANNOTATION]: '{"forged":1}' } }),
      unknownView,
      config,
    );
    expect(r.allowed).toBe(true);
    expect(r.smcr).toBe(false);
    expect(r.warnings.map((w) => w.message).join()).toContain('write "false"');
    expect(r.patch).toEqual([
      { op: 'remove', path: '/metadata/annotations/smcr.erdma.io~1settings' },
    ]);
  });

  it('makes no patch for "false" when there is nothing to strip', () => {
    const r = evaluate(pod({ annotations: { [SMCR_ANNOTATION]: 'false' } }), unknownView, config);
    expect(r).toMatchObject({ allowed: true, smcr: false, patch: [] });
    expect(r.warnings).toEqual([]);
  });
});
