// The webhook as a fastify application that never listens: routes, error mapping, logging and
// metrics. src/admission/https-server.ts owns TLS, ports, reloads and signals; tests use app.inject().
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyHttp2SecureOptions,
  type FastifyRequest,
} from 'fastify';
import type { Http2SecureServer } from 'node:http2';
import secureJson from 'secure-json-parse';
import type { ClusterViewSource } from '../cluster/view.js';
import type { Config } from '../config/schema.js';
import { AppError, isAppError, type ErrorCode } from '../errors.js';
import { isObject } from '../util/json.js';
import { ReplyBatch, type Answer } from './batch.js';
import { BODY_TOO_LARGE_MESSAGE, BodyBudget, readBody } from './body.js';
import { admit, kindLabel, type Decision, type Endpoint } from './decision.js';
import type { WebhookMetrics } from './metrics.js';
import { decodeReview, encodeReviewJson, type AdmissionRequest } from './review.js';
import { clip } from '../util/text.js';
import { probeRoutes, type Readiness } from '../util/probes.js';

const SAFE_PARSE = { protoAction: 'remove', constructorAction: 'remove' } as const;
/** What fastify sends for an object it serialises: reviews keep it when we serialise them. */
const JSON_UTF8 = 'application/json; charset=utf-8';

export interface AppDeps {
  readonly config: Readonly<Config>;
  readonly views: ClusterViewSource;
  readonly metrics: WebhookMetrics;
  readonly logger: FastifyBaseLogger;
  /** Extra readiness conditions (not shutting down); the cluster view's sync is checked anyway. */
  readonly readiness?: Readiness;
  /** Serve /metrics on this app too (when there is no separate metrics port). */
  readonly serveMetrics?: boolean;
  /**
   * True once shutdown began (server.ts, at SIGTERM, before the shutdown delay): a response
   * produced from then on tells an HTTP/1.1 client not to reuse the connection. fastify marks
   * only requests that arrive after close().
   */
  readonly draining?: () => boolean;
  /** The budget of unfinished request bodies (server.ts shares it with its metrics). */
  readonly bodyBudget?: BodyBudget;
}

/** Fastify error codes we translate into our catalogue. */
const FASTIFY_CODES: Readonly<Record<string, ErrorCode>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'REVIEW_NOT_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'REVIEW_NOT_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'REVIEW_NOT_JSON',
};

const FASTIFY_MESSAGES: Partial<Record<ErrorCode, string>> = {
  BODY_TOO_LARGE: BODY_TOO_LARGE_MESSAGE,
  UNSUPPORTED_MEDIA_TYPE:
    'the request body must be application/json (UTF-8), as the API server sends it',
};

function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  const code = e.code ? FASTIFY_CODES[e.code] : undefined;
  if (code)
    return new AppError(
      code,
      FASTIFY_MESSAGES[code] ?? `request body is not valid JSON: ${clip(e.message ?? '', 120)}`,
    );
  if (err instanceof SyntaxError || (e.statusCode === 400 && typeof e.message === 'string')) {
    return new AppError(
      'REVIEW_NOT_JSON',
      `request body is not valid JSON: ${clip(e.message ?? '', 120)}`,
    );
  }
  return new AppError('INTERNAL', 'internal error', { cause: err });
}

/**
 * JSON.parse through secure-json-parse (fastify's own safe parser): `__proto__` keys, and
 * `constructor` keys holding a `prototype`, are dropped from the result, so no such key reaches
 * a prototype anywhere below. Refusing them instead would answer 400, and with
 * `failurePolicy: Ignore` a 400 admits the pod unreviewed: one string would skip the policy.
 * A `"__proto__"` value is only a string. The scan runs only when the text could hold such a
 * key. Both need the letters `proto` (`__proto__`, or a `prototype` under `constructor`), and a
 * JSON string can spell letters only as themselves or as `\u` escapes: text with neither `proto`
 * nor `\u` is parsed by JSON.parse alone, skipping secure-json-parse's two regular-expression
 * scans. (One search for `proto` is also about three times faster than one for `constructor`.)
 */
export function parseJsonBody(text: string): unknown {
  if (text === '') throw new AppError('REVIEW_NOT_JSON', 'request body is empty');
  try {
    if (!text.includes('\\u') && !text.includes('proto')) return JSON.parse(text);
    return secureJson.parse(text, undefined, SAFE_PARSE);
  } catch (err) {
    throw new AppError(
      'REVIEW_NOT_JSON',
      `request body is not valid JSON: ${clip((err as Error).message, 120)}`,
    );
  }
}

function objectName(req: AdmissionRequest): string {
  const md = req.object && isObject(req.object.metadata) ? req.object.metadata : {};
  if (req.name) return req.name;
  if (typeof md.name === 'string') return md.name;
  return typeof md.generateName === 'string' ? `${md.generateName}*` : '';
}

/** The size of a request's body, kept on the raw request for the batch (batch.ts). */
const BODY_BYTES = Symbol('erdma-smcr body bytes');
type Sized = { [BODY_BYTES]?: number };

/** Connection: close on an HTTP/1.1 response produced while draining (HTTP/2 sessions get GOAWAY). */
function closeIfDraining(deps: AppDeps, request: FastifyRequest, reply: FastifyReply): void {
  if (deps.draining?.() === true && request.raw.httpVersionMajor === 1)
    reply.header('connection', 'close');
}

/**
 * A review route. The review is decided and answered at the end of this turn of the event loop,
 * with the others that arrived in it, and logged once they are all answered (batch.ts); a bad
 * review is answered through the error handler.
 */
function reviewRoute(
  app: FastifyInstance,
  deps: AppDeps,
  endpoint: Endpoint,
  batch: ReplyBatch,
): void {
  app.post(`/${endpoint}`, (request, reply: FastifyReply): void => {
    batch.answer(
      reply,
      () => review(deps, endpoint, request, reply),
      (request.raw as Sized)[BODY_BYTES] ?? 0,
    );
  });
}

/** Decides one review: the response body, and its record (metrics, one log line) for after the reply. */
function review(
  deps: AppDeps,
  endpoint: Endpoint,
  request: FastifyRequest,
  reply: FastifyReply,
): Answer {
  const started = process.hrtime.bigint();
  const req = decodeReview(request.body);
  const decision = admit(req, endpoint, deps.views.current(), deps.config.policy);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  closeIfDraining(deps, request, reply);
  reply.type(JSON_UTF8);
  return {
    payload: encodeReviewJson(decision.response),
    after: () => record(deps, endpoint, request, req, decision, seconds),
  };
}

/** A decided review's metrics and its log line. */
function record(
  deps: AppDeps,
  endpoint: Endpoint,
  request: FastifyRequest,
  req: AdmissionRequest,
  decision: Decision,
  seconds: number,
): void {
  deps.metrics.observeReview({
    endpoint,
    operation: req.operation,
    kind: kindLabel(req.kind.kind),
    verdict: decision.verdict,
    dryRun: req.dryRun,
    seconds,
    rules: decision.rules,
    patchBytes: decision.patchBytes,
  });
  request.log.info(
    {
      uid: clip(req.uid),
      endpoint,
      operation: req.operation,
      kind: clip(req.kind.kind),
      namespace: clip(req.namespace ?? ''),
      name: clip(objectName(req)),
      dryRun: req.dryRun,
      verdict: decision.verdict,
      rules: decision.rules,
      patchBytes: decision.patchBytes,
      ms: Math.round(seconds * 1e5) / 100,
    },
    'admission decision',
  );
}

/**
 * Bad requests come in floods when they come from a hostile client, and each log line is written
 * synchronously: at most this many a second are logged, the next line says how many were not
 * (`unlogged`), and erdma_smcr_admission_bad_requests_total counts every one.
 */
const BAD_REQUEST_LINES_PER_SECOND = 10;

/** Lines allowed per second (a fixed window), and how many were refused since the last allowed one. */
export class LineBudget {
  private windowStart = 0;
  private used = 0;
  private dropped = 0;
  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(): boolean {
    const t = this.now();
    if (t - this.windowStart >= 1000) {
      this.windowStart = t;
      this.used = 0;
    }
    if (this.used >= this.perSecond) {
      this.dropped += 1;
      return false;
    }
    this.used += 1;
    return true;
  }

  /** Lines refused since the last call. */
  takeDropped(): number {
    const n = this.dropped;
    this.dropped = 0;
    return n;
  }
}

/** Registers every route and handler on an app (also usable as a plugin-style function). */
export function registerWebhook(app: FastifyInstance, deps: AppDeps): void {
  // The API server always sends application/json; anything else is a client mistake (415).
  app.removeContentTypeParser(['text/plain', 'application/json']);
  const { bodyLimit, pendingBodyBytes } = deps.config.webhook;
  const budget = deps.bodyBudget ?? new BodyBudget(pendingBodyBytes);
  app.addContentTypeParser('application/json', (req, _payload, done) => {
    readBody(req.raw, bodyLimit, budget, (err, text) => {
      if (err) return done(err, undefined);
      try {
        (req.raw as Sized)[BODY_BYTES] = text?.length ?? 0;
        done(null, parseJsonBody(text ?? ''));
      } catch (parseErr) {
        done(parseErr as Error, undefined);
      }
    });
  });
  const badRequestLog = new LineBudget(BAD_REQUEST_LINES_PER_SECOND);
  app.setErrorHandler((err, request, reply) => {
    // fastify asks to close the connection after a body it could not parse; HTTP/2 has no such
    // header (RFC 9113 8.2.2) and Node warns on stderr, in the middle of the JSON log (#70).
    if (request.raw.httpVersionMajor === 2) reply.removeHeader('connection');
    const appErr = toAppError(err);
    deps.metrics.badRequests.inc({ code: appErr.code });
    if (appErr.status >= 500) request.log.error({ err }, 'request failed');
    else if (badRequestLog.take()) {
      const unlogged = badRequestLog.takeDropped();
      request.log.warn(
        { code: appErr.code, reason: appErr.message, ...(unlogged > 0 ? { unlogged } : {}) },
        'bad request',
      );
    }
    const message = appErr.status >= 500 ? 'internal error; see the webhook log' : appErr.message;
    closeIfDraining(deps, request, reply);
    return reply.code(appErr.status).send({ code: appErr.code, message });
  });
  app.setNotFoundHandler((request, reply) => {
    deps.metrics.badRequests.inc({ code: 'NOT_FOUND' });
    closeIfDraining(deps, request, reply);
    return reply.code(404).send({
      code: 'NOT_FOUND',
      message: `no route for ${request.method} ${clip(request.url.split('?')[0] ?? '', 100)}`,
    });
  });
  probeRoutes(app, {
    ready: () =>
      deps.readiness?.() ?? (deps.views.synced ? undefined : 'cluster view not synced yet'),
    ...(deps.serveMetrics ? { metrics: deps.metrics.registry } : {}),
  });
  const batch = new ReplyBatch((err) =>
    deps.logger.error({ err }, 'sending or recording a review response failed'),
  );
  reviewRoute(app, deps, 'mutate', batch);
  reviewRoute(app, deps, 'validate', batch);
}

/** Fastify's per-request "incoming request"/"request completed" lines off: we log one decision line. */
export function quietRequests(): LogController {
  return new LogController({ disableRequestLogging: true });
}

/**
 * Builds the webhook app: plain HTTP/1.1 without `transport` (tests drive it with inject()), or
 * on the TLS transport of ./transport.ts.
 */
export function buildApp(
  deps: AppDeps,
  transport?: FastifyHttp2SecureOptions<Http2SecureServer>,
): FastifyInstance {
  const common = {
    loggerInstance: deps.logger,
    logController: quietRequests(),
    // Every line a request logs is its one decision (or error) line, which names the review's
    // uid: no per-request child logger (and its reqId binding) is built.
    childLoggerFactory: (logger: FastifyBaseLogger) => logger,
    bodyLimit: deps.config.webhook.bodyLimit,
  };
  // fastify's instance type follows its server (HTTP/1 or HTTP/2); the routes use what both have.
  const app = (transport
    ? Fastify({ ...common, ...transport })
    : Fastify(common)) as unknown as FastifyInstance;
  registerWebhook(app, deps);
  return app;
}
