// Annotations that would do nothing in silence (#41): misspelled keys get a "did you mean", the
// SMC-R annotation on metadata the pod never gets is named with where it belongs, and an outer
// value that contradicts the pod template's says which one applies.
import { describe, expect, it } from 'vitest';
import { SMCR_ANNOTATION } from '../../../src/constants.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import { meantAnnotation } from '../../../src/policy/hints.js';
import type { JsonObject } from '../../../src/policy/types.js';
import { config, pod, unknownView, workload } from '../../helpers/policy.js';

const warningsOf = (obj: JsonObject): readonly string[] =>
  evaluate(obj, unknownView, config).warnings.map((w) => w.message);

describe('misspelled annotation keys', () => {
  it.each([
    ['network.alibabacloud.com/erdma_smcr', SMCR_ANNOTATION],
    ['network.alibabacloud.com/erdma-smc', SMCR_ANNOTATION],
    ['Network.alibabacloud.com/erdma-smcr', SMCR_ANNOTATION],
    ['smcr.erdma.io/wmen', 'smcr.erdma.io/wmem'],
    ['smcr.erdma.io/keep-ipv-6', 'smcr.erdma.io/keep-ipv6'],
    ['smcr.erdma.io/autocorking_size', 'smcr.erdma.io/autocorking-size'],
    ['smcr.erdma.io/containr', 'smcr.erdma.io/container'],
    // The selection's keys (#102): a typo there gave the pod every port, in silence.
    ['smcr.erdma.io/connect-port', 'smcr.erdma.io/connect-ports'],
    ['smcr.erdma.io/connect_ports', 'smcr.erdma.io/connect-ports'],
    ['smcr.erdma.io/conect-ports', 'smcr.erdma.io/connect-ports'],
    ['smcr.erdma.io/listen-port', 'smcr.erdma.io/listen-ports'],
    ['smcr.erdma.io/device_claim', 'smcr.erdma.io/device-claim'],
    ['smcr.erdma.io/mechanisms', 'smcr.erdma.io/mechanism'],
  ])('%s: did you mean %s', (typo, meant) => {
    expect(meantAnnotation(typo)).toBe(meant);
  });

  it.each([
    SMCR_ANNOTATION,
    'smcr.erdma.io/wmem',
    'smcr.erdma.io/settings',
    'smcr.erdma.io/connect-ports',
    'smcr.erdma.io/listen-ports',
    'smcr.erdma.io/device-claim',
    'smcr.erdma.io/mechanism',
    'network.alibabacloud.com/pod-networks',
    'app.kubernetes.io/name',
    'smcr.erdma.io/something-else-entirely',
  ])('%s: no suggestion', (key) => {
    expect(meantAnnotation(key)).toBeUndefined();
  });

  it('a hostNetwork pod with the key misspelled passes, with a warning naming the key meant', () => {
    const p = pod({ spec: { hostNetwork: true } });
    (p.metadata as { annotations: Record<string, string> }).annotations = {
      'network.alibabacloud.com/erdma_smcr': 'true',
    };
    const r = evaluate(p, unknownView, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings).toEqual([
      {
        // Its own rule, whose fix is not "write true or false" (#102).
        rule: 'annotation-placement',
        message: `metadata.annotations: "network.alibabacloud.com/erdma_smcr" is not an annotation erdma-smcr reads; did you mean "${SMCR_ANNOTATION}"?`,
      },
    ]);
  });

  it('a misspelled tuning key on an SMC-R pod is named next to the verdict', () => {
    const w = warningsOf(pod({ annotations: { 'smcr.erdma.io/wmen': '262144' } }));
    expect(w).toContainEqual(expect.stringContaining('did you mean "smcr.erdma.io/wmem"?'));
  });
});

describe('the SMC-R annotation where the pod never gets it', () => {
  it("only on a CronJob's spec.jobTemplate.metadata: says where it belongs", () => {
    const c = workload('CronJob', {}, {});
    (c.spec as { jobTemplate: JsonObject }).jobTemplate.metadata = {
      annotations: { [SMCR_ANNOTATION]: 'true' },
    };
    expect(warningsOf(c)).toEqual([
      `${SMCR_ANNOTATION} on spec.jobTemplate.metadata does nothing; put it on spec.jobTemplate.spec.template.metadata.annotations`,
    ]);
  });

  it('"true" on the Deployment and "false" on its template: says the pod gets "false"', () => {
    const d = workload('Deployment', {}, { [SMCR_ANNOTATION]: 'false' });
    (d.metadata as JsonObject).annotations = { [SMCR_ANNOTATION]: 'true' };
    expect(warningsOf(d)).toContainEqual(
      `${SMCR_ANNOTATION} is "true" on the Deployment's own metadata but "false" on spec.template.metadata.annotations: the pod gets "false"`,
    );
  });

  it("the selection's ports on the Deployment's own metadata: says where they belong (#102)", () => {
    const d = workload('Deployment', {});
    (d.metadata as JsonObject).annotations = {
      'smcr.erdma.io/connect-ports': '6379',
      'smcr.erdma.io/wmem': '262144',
    };
    expect(warningsOf(d)).toEqual(
      expect.arrayContaining([
        "smcr.erdma.io/connect-ports on the Deployment's own metadata does nothing; put it on spec.template.metadata.annotations",
        "smcr.erdma.io/wmem on the Deployment's own metadata does nothing; put it on spec.template.metadata.annotations",
      ]),
    );
    // On the template too: the pod has it, nothing to say.
    const both = workload('Deployment', {}, { 'smcr.erdma.io/connect-ports': '6379' });
    (both.metadata as JsonObject).annotations = { 'smcr.erdma.io/connect-ports': '6379' };
    expect(warningsOf(both).filter((w) => w.includes('connect-ports'))).toEqual([]);
  });

  it('the same value on both, or only on the template: no warning', () => {
    const d = workload('Deployment', {});
    (d.metadata as JsonObject).annotations = { [SMCR_ANNOTATION]: 'true' };
    expect(warningsOf(d).filter((w) => w.includes('metadata'))).toEqual([]);
    expect(warningsOf(workload('Deployment', {})).filter((w) => w.includes('metadata'))).toEqual(
      [],
    );
  });
});
