// Every admission rule, one file each. A new rule is a new file here, its line in RULES, and its
// test in test/unit/policy/rules/.
import { annotationPlacement } from './annotation-placement.js';
import { annotationValue } from './annotation-value.js';
import { container } from './container.js';
import { deviceClaim } from './device-claim.js';
import { driverMode } from './driver-mode.js';
import { erdmaResource } from './erdma-resource.js';
import { hostNetwork } from './host-network.js';
import { ipFamily } from './ip-family.js';
import { nodeEligibility } from './node-eligibility.js';
import { objectKind } from './object-kind.js';
import { objectSize } from './object-size.js';
import { rdmaHostNetwork } from './rdma-host-network.js';
import { rdmaIpcLock } from './rdma-ipc-lock.js';
import { reservedPorts } from './reserved-ports.js';
import { selection } from './selection.js';
import type { PodCheck, Rule } from './rule.js';
import { tuning } from './tuning.js';

export type { PodCheck, Rule, RuleContext, RuleOutcome, RuleScope } from './rule.js';

/** Every rule, in the order `erdma-smcr rules` and docs/policy.md list them. */
export const RULES: readonly Rule[] = [
  annotationValue,
  annotationPlacement,
  hostNetwork,
  driverMode,
  nodeEligibility,
  ipFamily,
  erdmaResource,
  tuning,
  selection,
  container,
  deviceClaim,
  reservedPorts,
  objectSize,
  rdmaHostNetwork,
  rdmaIpcLock,
  objectKind,
];

/**
 * The checks run for a pod that asks for SMC-R, in the order their verdicts are reported:
 * object-size first (it bounds what the others read), then the others in RULES' order.
 */
export const POD_RULES: readonly { readonly id: string; readonly check: PodCheck }[] = [
  objectSize,
  ...RULES.filter((r) => r !== objectSize),
].flatMap((r) => (r.check ? [{ id: r.id, check: r.check }] : []));
