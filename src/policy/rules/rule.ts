// What a rule is: one file under src/policy/rules/ holds a rule's id, when it applies, its check,
// its messages and fix, and its example. `erdma-smcr rules`, SARIF's rule list and the tables of
// docs/policy.md are read from these files (test/unit/policy/catalogue.test.ts keeps the docs equal).
import { SMCR_ANNOTATION } from '../../constants.js';
import type { PolicyConfig } from '../../config/schema.js';
import { keyPath } from '../locate.js';
import type { ResolvedSelection } from '../selection.js';
import type { ResolvedTuning } from '../settings.js';
import type { ClusterView, Denial, PodLocation } from '../types.js';

/** What a check of an SMC-R pod reads: the pod, the cluster, the configuration, the resolved tuning. */
export interface RuleContext {
  readonly loc: PodLocation;
  readonly view: ClusterView;
  readonly config: PolicyConfig;
  readonly annotations: Readonly<Record<string, string>>;
  readonly tuning: ResolvedTuning;
  /** Which connections use SMC (selection.ts). */
  readonly selection: ResolvedSelection;
}

export interface RuleOutcome {
  readonly denials: Denial[];
  readonly warnings: string[];
}

/** One check of a pod that asks for SMC-R. */
export type PodCheck = (ctx: RuleContext) => RuleOutcome;

/**
 * The pods a rule judges: `smcr`, pods that ask for SMC-R; `rdma`, pods that get an RDMA device
 * without it; `review`, the AdmissionReview itself (what an API server never sends).
 */
export type RuleScope = 'smcr' | 'rdma' | 'review';

export interface Rule {
  /** The id every denial carries (`[host-network]`, `rule` in JSON, SARIF's ruleId). */
  readonly id: string;
  readonly scope: RuleScope;
  /** When it denies (Markdown, as in docs/policy.md). */
  readonly when: string;
  /** What the user changes (Markdown). */
  readonly fix: string;
  /** A manifest in examples/ that it denies. */
  readonly example?: string;
  /**
   * Its check of an SMC-R pod, run in POD_RULES' order; absent for a rule judged at another
   * step (the annotation's value, the review, an RDMA pod), whose file exports that step's check.
   */
  readonly check?: PodCheck;
}

export const none = (): RuleOutcome => ({ denials: [], warnings: [] });

export const deny = (rule: string, path: string, message: string): RuleOutcome => ({
  denials: [{ rule, path, message }],
  warnings: [],
});

export const warn = (...warnings: string[]): RuleOutcome => ({ denials: [], warnings });

/** The path of one of the pod's annotations, kubectl style. */
export function annotationPath(ctx: { loc: PodLocation }, key = SMCR_ANNOTATION): string {
  return keyPath(`${ctx.loc.prefix}metadata.annotations`, key);
}
