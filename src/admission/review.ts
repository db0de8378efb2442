// AdmissionReview admission.k8s.io/v1: decoding a request defensively and encoding a response.
// https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#request
import { AppError } from '../errors.js';
import { isObject } from '../util/json.js';
import { quoted } from '../util/text.js';
import { patchJson } from '../policy/patch.js';
import type { JsonObject, PatchOperation } from '../policy/types.js';

export const REVIEW_API_VERSION = 'admission.k8s.io/v1';
export const REVIEW_KIND = 'AdmissionReview';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
const OPERATIONS = new Set<string>(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export interface AdmissionRequest {
  readonly uid: string;
  readonly kind: GroupVersionKind;
  readonly operation: AdmissionOperation;
  readonly namespace?: string;
  readonly name?: string;
  readonly subResource?: string;
  readonly dryRun: boolean;
  readonly object?: JsonObject;
  readonly oldObject?: JsonObject;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason?: string; message: string };
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

export interface AdmissionReviewResponse {
  apiVersion: typeof REVIEW_API_VERSION;
  kind: typeof REVIEW_KIND;
  response: AdmissionResponse;
}

function invalid(message: string): AppError {
  return new AppError('REVIEW_INVALID', message);
}

function gvk(v: unknown): GroupVersionKind {
  if (!isObject(v) || typeof v.kind !== 'string' || v.kind === '')
    throw invalid('request.kind.kind is missing');
  return {
    group: typeof v.group === 'string' ? v.group : '',
    version: typeof v.version === 'string' ? v.version : '',
    kind: v.kind,
  };
}

function optionalObject(v: unknown, field: string): JsonObject | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw invalid(`request.${field} must be an object`);
  return v;
}

function envelope(body: unknown): JsonObject {
  if (!isObject(body)) throw invalid('body must be a JSON object holding an AdmissionReview');
  if (body.apiVersion !== REVIEW_API_VERSION || body.kind !== REVIEW_KIND) {
    throw invalid(
      `expected apiVersion ${REVIEW_API_VERSION} and kind ${REVIEW_KIND}, got ${quoted(body.apiVersion)} ` +
        `and ${quoted(body.kind)} (set admissionReviewVersions: [v1])`,
    );
  }
  const r = body.request;
  if (!isObject(r)) throw invalid('AdmissionReview has no request');
  return r;
}

/** Copies the optional string fields that are present and non-empty. */
function optionalStrings(
  r: JsonObject,
): Pick<AdmissionRequest, 'namespace' | 'name' | 'subResource'> {
  const out: { namespace?: string; name?: string; subResource?: string } = {};
  for (const key of ['namespace', 'name', 'subResource'] as const) {
    const v = r[key];
    if (typeof v === 'string' && v !== '') out[key] = v;
  }
  return out;
}

/** Validates the envelope of a decoded body and returns the request. Throws AppError with a reason. */
export function decodeReview(body: unknown): AdmissionRequest {
  const r = envelope(body);
  if (typeof r.uid !== 'string' || r.uid === '') throw invalid('request.uid is missing');
  if (typeof r.operation !== 'string' || !OPERATIONS.has(r.operation)) {
    throw invalid(
      `request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, got ${quoted(r.operation)}`,
    );
  }
  const object = optionalObject(r.object, 'object');
  const oldObject = optionalObject(r.oldObject, 'oldObject');
  return {
    uid: r.uid,
    kind: gvk(r.kind),
    operation: r.operation as AdmissionOperation,
    ...optionalStrings(r),
    dryRun: r.dryRun === true,
    ...(object ? { object } : {}),
    ...(oldObject ? { oldObject } : {}),
  };
}

export function encodeReview(response: AdmissionResponse): AdmissionReviewResponse {
  return { apiVersion: REVIEW_API_VERSION, kind: REVIEW_KIND, response };
}

/**
 * JSON.stringify(encodeReview(response)), byte for byte, for a response built as the handler
 * builds it (keys in AdmissionResponse's order; test/unit/admission/review.test.ts checks both). The
 * base64 patch, most of the text, is copied as it is: base64 has nothing JSON must escape.
 */
export function encodeReviewJson(r: AdmissionResponse): string {
  let out = `{"apiVersion":"${REVIEW_API_VERSION}","kind":"${REVIEW_KIND}","response":{"uid":${JSON.stringify(r.uid)},"allowed":${String(r.allowed)}`;
  if (r.status !== undefined) out += `,"status":${JSON.stringify(r.status)}`;
  if (r.patchType !== undefined) out += `,"patchType":${JSON.stringify(r.patchType)}`;
  if (r.patch !== undefined) out += `,"patch":"${r.patch}"`;
  if (r.warnings !== undefined) out += `,"warnings":${JSON.stringify(r.warnings)}`;
  if (r.auditAnnotations !== undefined)
    out += `,"auditAnnotations":${JSON.stringify(r.auditAnnotations)}`;
  return `${out}}}`;
}

/**
 * The patch as an AdmissionResponse carries it: the UTF-8 bytes of its JSON in base64, and how
 * many bytes that is. All-ASCII JSON (one byte per character, the usual case) is encoded by btoa,
 * which needs no Buffer; anything else goes through a UTF-8 Buffer (btoa would take it as Latin-1).
 */
export function encodePatch(ops: readonly PatchOperation[]): {
  readonly base64: string;
  readonly bytes: number;
} {
  const json = patchJson(ops);
  const bytes = Buffer.byteLength(json);
  return {
    base64: bytes === json.length ? btoa(json) : Buffer.from(json).toString('base64'),
    bytes,
  };
}
