// The CEL we ship, evaluated by a CEL library (@bufbuild/cel) the way the API server evaluates
// matchConditions and ValidatingAdmissionPolicy expressions: object, oldObject and request, with
// JSON objects as maps. The harness's API server (1.20) runs neither, so the unit tests and the
// in-cluster suite both ask this. Expressions are read from the manifests as shipped.
import { run } from '@bufbuild/cel';
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';

export type Json = string | number | boolean | null | Json[] | { [k: string]: Json };
type CelIn = string | number | boolean | null | CelIn[] | Map<string, CelIn>;

/** JSON as the API server hands it to CEL: objects are maps. */
const toCel = (v: Json): CelIn =>
  Array.isArray(v)
    ? v.map(toCel)
    : v !== null && typeof v === 'object'
      ? new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]))
      : v;

export interface CelRequest {
  operation: 'CREATE' | 'UPDATE';
  username?: string;
  nodeName?: string;
}

export function evaluate(
  expr: string,
  object: Json,
  oldObject: Json | null,
  req: CelRequest,
): unknown {
  const extra: Record<string, string[]> = req.nodeName
    ? { 'authentication.kubernetes.io/node-name': [req.nodeName] }
    : {};
  return run(expr, {
    object: toCel(object),
    oldObject: toCel(oldObject),
    request: toCel({
      operation: req.operation,
      userInfo: { username: req.username ?? 'system:serviceaccount:batch:job-controller', extra },
    }),
  } as never);
}

/** The match-conditions overlay's conditions on the pod webhook, as shipped. */
export function podWebhookConditions(): { name: string; expression: string }[] {
  const docs = yaml.loadAll(
    readFileSync('manifests/overlays/match-conditions/erdma-smcr.yaml', 'utf8'),
  ) as {
    kind?: string;
    webhooks?: { matchConditions?: { name: string; expression: string }[] }[];
  }[];
  const mutating = docs.find((d) => d?.kind === 'MutatingWebhookConfiguration');
  const conditions = mutating?.webhooks?.[0]?.matchConditions;
  if (!conditions)
    throw new Error('the match-conditions overlay has no pod webhook matchConditions');
  return conditions;
}

/** Whether an API server 1.28+ with that overlay calls the pod webhook: every condition true. */
export function podWebhookCalled(
  object: Json,
  oldObject: Json | null,
  operation: CelRequest['operation'],
): boolean {
  return podWebhookConditions().every(
    (c) => evaluate(c.expression, object, oldObject, { operation }) === true,
  );
}
