// The admission decision for one request: pure, no HTTP. Decodes nothing and logs nothing;
// the route turns its Decision into a response, a log line and metrics.
import type { PolicyConfig } from '../config/schema.js';
import { AppError } from '../errors.js';
import { evaluate } from '../policy/evaluate.js';
import { SUPPORTED_KINDS } from '../policy/locate.js';
import type { ClusterView, Denial, JsonObject, PolicyResult } from '../policy/types.js';
import { encodePatch, type AdmissionRequest, type AdmissionResponse } from './review.js';
import { kindMismatch } from '../policy/rules/object-kind.js';
import { updateVerdict } from '../policy/update.js';
import { clip } from '../util/text.js';

export type Endpoint = 'mutate' | 'validate';
export type VerdictLabel = 'allowed' | 'denied' | 'skipped';

export interface Decision {
  readonly response: AdmissionResponse;
  readonly verdict: VerdictLabel;
  /** Rule ids of the denials. */
  readonly rules: readonly string[];
  readonly patchBytes: number;
  readonly smcr: boolean;
}

/** Kinds each endpoint reviews; anything else is a configuration mistake (400). */
export const ENDPOINT_KINDS: Readonly<Record<Endpoint, ReadonlySet<string>>> = {
  mutate: new Set(['Pod']),
  validate: new Set(SUPPORTED_KINDS),
};

const KIND_LABELS: ReadonlySet<string> = new Set([
  ...ENDPOINT_KINDS.mutate,
  ...ENDPOINT_KINDS.validate,
]);

/** The metric label for a request's kind: one of the kinds we review, else "other" (a label set must stay fixed). */
export function kindLabel(kind: string): string {
  return KIND_LABELS.has(kind) ? kind : 'other';
}

/** The API server truncates longer warnings (and drops many): keep each short and the list bounded. */
export const MAX_WARNING_LENGTH = 120;
export const MAX_WARNINGS = 10;

/** A warning that shapeWarnings would leave as it is. */
function isShaped(w: string): boolean {
  return w !== '' && w.length < MAX_WARNING_LENGTH && w.trim() === w && !/^warning:/i.test(w);
}

export function shapeWarnings(warnings: readonly string[]): string[] {
  if (warnings.length === 0) return [];
  // The usual case, one warning of our own making: nothing to drop, trim or clip.
  if (warnings.length === 1 && isShaped(warnings[0]!)) return [warnings[0]!];
  const unique = [...new Set(warnings.map((w) => w.replace(/^warning:\s*/i, '').trim()))].filter(
    (w) => w !== '',
  );
  return unique
    .slice(0, MAX_WARNINGS)
    .map((w) => (w.length < MAX_WARNING_LENGTH ? w : `${w.slice(0, MAX_WARNING_LENGTH - 4)}...`));
}

/** The message the API server shows after `admission webhook "..." denied the request: `. */
export function denialMessage(denials: readonly Denial[]): string {
  return denials.map((d) => `[${d.rule}] ${d.path}: ${d.message}`).join('; ');
}

function skipped(uid: string): Decision {
  return {
    response: { uid, allowed: true, auditAnnotations: { decision: 'skipped' } },
    verdict: 'skipped',
    rules: [],
    patchBytes: 0,
    smcr: false,
  };
}

function respond(uid: string, result: PolicyResult): Decision {
  const rules = result.denials.map((d) => d.rule);
  const warnings = shapeWarnings(result.warnings.map((w) => w.message));
  const response: AdmissionResponse = { uid, allowed: result.allowed };
  if (!result.allowed) {
    response.status = { code: 403, reason: 'Forbidden', message: denialMessage(result.denials) };
  }
  let patchBytes = 0;
  if (result.allowed && result.patch.length > 0) {
    const patch = encodePatch(result.patch);
    patchBytes = patch.bytes;
    response.patchType = 'JSONPatch';
    response.patch = patch.base64;
  }
  if (warnings.length > 0) response.warnings = warnings;
  const verdict: VerdictLabel = result.untouched
    ? 'skipped'
    : result.allowed
      ? 'allowed'
      : 'denied';
  const audit: Record<string, string> = { decision: verdict };
  if (result.smcr) audit.smcr = 'true';
  if (rules.length > 0) audit['denied-rules'] = [...new Set(rules)].join(',');
  if (patchBytes > 0) audit.mutated = 'true';
  response.auditAnnotations = audit;
  return { response, verdict, rules, patchBytes, smcr: result.smcr };
}

function refusedKind(obj: JsonObject, kind: string): PolicyResult | undefined {
  const denial = kindMismatch(obj, kind);
  if (!denial) return undefined;
  return {
    allowed: false,
    denials: [denial],
    warnings: [],
    patch: [],
    mutated: obj,
    smcr: false,
    untouched: false,
  };
}

function ensureKind(obj: JsonObject, kind: string): JsonObject {
  return obj.kind === kind ? obj : { ...obj, kind };
}

/** Decides one admission request for an endpoint. Throws AppError(400) for a request we cannot serve. */
export function admit(
  req: AdmissionRequest,
  endpoint: Endpoint,
  view: ClusterView,
  config: PolicyConfig,
): Decision {
  if (req.operation === 'DELETE' || req.operation === 'CONNECT' || req.subResource !== undefined)
    return skipped(req.uid);
  const kind = req.kind.kind;
  if (!ENDPOINT_KINDS[endpoint].has(kind)) {
    throw new AppError(
      'REVIEW_UNSUPPORTED_KIND',
      `/${endpoint} does not review ${clip(kind, 63)} objects (it reviews ${[...ENDPOINT_KINDS[endpoint]].join(', ')}); check the webhook's rules`,
    );
  }
  if (!req.object)
    throw new AppError('REVIEW_INVALID', `request.object is missing for ${req.operation}`);
  // The API server sends the object in the kind it names; anything else did not come from it, and
  // reviewing it as request.kind would judge (and patch) one object as another: refuse it.
  const mismatch =
    refusedKind(req.object, kind) ?? (req.oldObject ? refusedKind(req.oldObject, kind) : undefined);
  if (mismatch) return respond(req.uid, mismatch);
  const object = ensureKind(req.object, kind);
  if (req.operation === 'UPDATE') {
    const old = req.oldObject ? ensureKind(req.oldObject, kind) : undefined;
    return respond(req.uid, updateVerdict(object, old, view, config, endpoint === 'mutate'));
  }
  return respond(req.uid, evaluate(object, view, config, { mutate: endpoint === 'mutate' }));
}
