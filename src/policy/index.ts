// Public surface of the policy engine.
export { evaluate, type EvaluateOptions } from './evaluate.js';
export { updateVerdict } from './update.js';
export { kernelEligibility, parseKernelVersion, MIN_KERNEL_TEXT } from './kernel.js';
export { nodeStatus } from './eligibility.js';
export { locatePod, SUPPORTED_KINDS } from './locate.js';
export { parseGoBool } from './parse-bool.js';
export { KNOBS, resolveTuning, settingsDocument } from './settings.js';
export * from './types.js';
