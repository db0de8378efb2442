// AdmissionReview fixtures captured from a real kube-apiserver v1.37.2 (test/harness/capture-reviews.ts), with helpers to add our
// annotation the way a user would (the captures carry none).
import { readFileSync } from 'node:fs';
import fastJsonPatch from 'fast-json-patch';
import { pino } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { buildApp } from '../../src/admission/app.js';
import { WebhookMetrics } from '../../src/admission/metrics.js';
import { StaticViewSource } from '../../src/cluster/view.js';
import { loadConfig } from '../../src/config/load.js';
import type { ClusterView, JsonObject } from '../../src/policy/types.js';
import { NodeIndex } from '../../src/policy/nodes.js';

export type FixtureName =
  | 'deployment-create-dryrun'
  | 'deployment-create'
  | 'pod-create-by-replicaset-controller'
  | 'pod-create-dryrun'
  | 'pod-create'
  | 'pod-create-native-sidecar'
  | 'pod-create-pod-level-resources'
  | 'pod-update'
  | 'pod-update-resize';

export function fixture(name: FixtureName): JsonObject {
  return JSON.parse(
    readFileSync(`test/fixtures/apiserver-v1.37.2/admissionreview-${name}.json`, 'utf8'),
  ) as JsonObject;
}

interface Review {
  request: {
    uid: string;
    operation: string;
    object: JsonObject | null;
    oldObject: JsonObject | null;
    dryRun?: boolean;
    subResource?: string;
  };
}

/** Sets annotations on the pod (or pod template) of a review's object. */
export function annotate(
  review: JsonObject,
  annotations: Record<string, string>,
  which: 'object' | 'oldObject' = 'object',
): JsonObject {
  const copy = structuredClone(review) as unknown as Review;
  const obj = copy.request[which] as JsonObject & {
    kind: string;
    metadata: JsonObject;
    spec: { template: { metadata: JsonObject } };
  };
  const md = obj.kind === 'Pod' ? obj.metadata : (obj.spec.template.metadata ??= {});
  md.annotations = { ...((md.annotations as Record<string, string>) ?? {}), ...annotations };
  return copy as unknown as JsonObject;
}

export function smcrReview(name: FixtureName, extra: Record<string, string> = {}): JsonObject {
  return annotate(fixture(name), { 'network.alibabacloud.com/erdma-smcr': 'true', ...extra });
}

/** Edits a review in place-free fashion: returns a copy after `fn` ran on it. */
export function edit(review: JsonObject, fn: (r: Review) => void): JsonObject {
  const copy = structuredClone(review) as unknown as Review;
  fn(copy);
  return copy as unknown as JsonObject;
}

/** Decodes the response patch and applies it to the request object, as the API server does. */
export function applyResponse(review: JsonObject, response: { patch?: string }): JsonObject {
  const object = (review as unknown as Review).request.object as JsonObject;
  if (!response.patch) return object;
  const ops = JSON.parse(
    Buffer.from(response.patch, 'base64').toString('utf8'),
  ) as fastJsonPatch.Operation[];
  return fastJsonPatch.applyPatch(structuredClone(object), ops, true, false).newDocument;
}

export const silentLogger = pino({ level: 'silent' });

export function testApp(
  view?: ClusterView,
  flags: Record<string, unknown> = {},
  logger: FastifyBaseLogger = silentLogger,
) {
  const config = loadConfig({ flags });
  const metrics = new WebhookMetrics({ defaultMetrics: false });
  const views = new StaticViewSource(
    view ?? {
      driverMode: 'default',
      ipFamilies: ['IPv4'],
      nodesKnown: false,
      nodes: new NodeIndex(),
    },
  );
  const app = buildApp({ config, views, metrics, logger, serveMetrics: true });
  return { app, metrics, config };
}

/**
 * The fuzzers' mutation: the value at one of the review's JSON pointers (chosen by index, modulo
 * their number; pointer 0 is the whole document) replaced by `value`, on a copy.
 */
export function replaceAt(review: JsonObject, pointerIndex: number, value: unknown): unknown {
  const copy = structuredClone(review);
  const pointers: string[] = [];
  const walk = (v: unknown, p: string): void => {
    pointers.push(p);
    if (v && typeof v === 'object')
      for (const [k, c] of Object.entries(v))
        walk(c, `${p}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  };
  walk(copy, '');
  const target = pointers[pointerIndex % pointers.length] ?? '';
  if (target === '') return value;
  fastJsonPatch.applyOperation(copy, { op: 'replace', path: target, value }, false, true);
  return copy;
}
