// annotation-placement: our annotations where they do nothing, in silence otherwise (#41, #102): a key
// of ours misspelled ("did you mean"), or on metadata the pod never gets (a workload's own, a
// CronJob's job template, a label). A warning: the object is valid, it just does not say what its
// author meant. The checks are in ../hints.ts.
import type { Rule } from './rule.js';

export const annotationPlacement: Rule = {
  id: 'annotation-placement',
  scope: 'smcr',
  when: "never: it warns when a key looks like one of ours but is misspelled (`smcr.erdma.io/connect-port`), or one of ours sits where the pod never gets it (a workload's own metadata, a CronJob's `spec.jobTemplate.metadata`, a label), or the SMC-R annotation on a workload contradicts its pod template's",
  fix: 'rename or move it as the warning says: the pod reads `metadata.annotations` of its own template',
  example: 'examples/warned/annotation-placement.yaml',
};
