// Prometheus metrics of the webhook (prom-client), in a registry of its own.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from '../util/prom.js';

/** One answered review, as the metrics see it (label values are bounded by the caller). */
export interface ReviewObservation {
  readonly endpoint: string;
  readonly operation: string;
  readonly kind: string;
  readonly verdict: string;
  readonly dryRun: boolean;
  readonly seconds: number;
  readonly rules: readonly string[];
  readonly patchBytes: number;
}

export class WebhookMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'erdma_smcr_admission_requests_total',
    help: 'Admission reviews answered, by endpoint, operation, kind and verdict (allowed, denied, skipped).',
    labelNames: ['endpoint', 'operation', 'kind', 'verdict', 'dry_run'] as const,
    registers: [this.registry],
    collect: () => this.flushReviews(),
  });
  readonly duration = new Histogram({
    name: 'erdma_smcr_admission_duration_seconds',
    help: "Time to decide a review (decode, policy, patch), by endpoint; reading the body and sending the answer are not included (the API server's apiserver_admission_webhook_admission_duration_seconds has the round trip).",
    labelNames: ['endpoint'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
    collect: () => this.flushReviews(),
  });
  readonly denials = new Counter({
    name: 'erdma_smcr_admission_denials_total',
    help: 'Denials by rule id (one request can count under several rules).',
    labelNames: ['rule'] as const,
    registers: [this.registry],
    collect: () => this.flushReviews(),
  });
  readonly patchBytes = new Histogram({
    name: 'erdma_smcr_admission_patch_bytes',
    help: 'Size of the JSON Patch returned for mutated pods.',
    buckets: [64, 128, 256, 512, 1024, 2048, 4096],
    registers: [this.registry],
    collect: () => this.flushReviews(),
  });
  readonly badRequests = new Counter({
    name: 'erdma_smcr_admission_bad_requests_total',
    help: 'Requests refused before a decision, by error code.',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly certReloads = new Counter({
    name: 'erdma_smcr_certificate_reloads_total',
    help: 'Serving certificate reloads, by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly certExpiry = new Gauge({
    name: 'erdma_smcr_certificate_expiry_timestamp_seconds',
    help: 'notAfter of the serving certificate in use.',
    registers: [this.registry],
  });
  readonly certSteps = new Counter({
    name: 'erdma_smcr_certificate_secret_steps_total',
    help: 'Changes this replica made to the certificate Secret: create, reissue, add-next-ca, promote-ca, prune-bundle.',
    labelNames: ['step'] as const,
    registers: [this.registry],
  });
  readonly viewStale = new Gauge({
    name: 'erdma_smcr_cluster_view_stale',
    help: '1 while the cluster view is served from the last good state because its watch is broken.',
    registers: [this.registry],
  });

  readonly pendingBodyBytes = new Gauge({
    name: 'erdma_smcr_admission_pending_body_bytes',
    help: 'Bytes held by request bodies still being received (bounded by webhook.pendingBodyBytes).',
    registers: [this.registry],
  });
  readonly droppedBodies = new Counter({
    name: 'erdma_smcr_admission_dropped_bodies_total',
    help: 'Unfinished request bodies dropped, oldest first, to keep pending body bytes within their budget.',
    registers: [this.registry],
  });

  readonly connections = new Gauge({
    name: 'erdma_smcr_admission_connections',
    help: 'Open client connections (bounded by webhook.maxConnections).',
    registers: [this.registry],
  });
  readonly evictedConnections = new Counter({
    name: 'erdma_smcr_admission_evicted_connections_total',
    help: 'Connections closed because webhook.maxConnections were open: those never answered first, oldest first, else the one idle the longest.',
    registers: [this.registry],
  });
  readonly streams = new Gauge({
    name: 'erdma_smcr_admission_streams',
    help: 'Open HTTP/2 streams across all connections (bounded by webhook.maxStreams).',
    registers: [this.registry],
  });
  readonly cancelledStreams = new Counter({
    name: 'erdma_smcr_admission_cancelled_streams_total',
    help: 'HTTP/2 streams cancelled, oldest first, because webhook.maxStreams were open.',
    registers: [this.registry],
  });

  /** Reads the connection and stream guards at scrape time. */
  trackConnections(
    guard: { readonly connections: number; readonly evicted: number },
    streams?: { readonly open: number; readonly cancelled: number },
  ): void {
    readAtScrape(this.connections, () => guard.connections);
    readAtScrape(this.evictedConnections, () => guard.evicted);
    if (streams) {
      readAtScrape(this.streams, () => streams.open);
      readAtScrape(this.cancelledStreams, () => streams.cancelled);
    }
  }

  /** Reads the body budget at scrape time (no work per request). */
  trackBodies(budget: { readonly bytes: number; readonly dropped: number }): void {
    readAtScrape(this.pendingBodyBytes, () => budget.bytes);
    readAtScrape(this.droppedBodies, () => budget.dropped);
  }

  /** Label children of the per-review metrics, by label values: prom-client hashes a label object on every call. */
  private readonly counted = new Map<string, Counter.Internal>();
  private readonly timed = new Map<string, Histogram.Internal<'endpoint'>>();
  private readonly denied = new Map<string, Counter.Internal>();

  /**
   * Reviews answered and not yet applied to the metrics. prom-client costs about 15 µs of CPU per
   * review in a loaded server for these four updates (a label hash and a closure per call, run
   * cold between TLS, HTTP and the decision), against 1.4 µs applied back to back: so they are
   * queued, and applied together before every scrape (prom-client calls each metric's collect())
   * and whenever `batch` are waiting. What a scrape shows is exactly what immediate updates give.
   */
  private pendingReviews: ReviewObservation[] = [];
  private readonly batch: number;

  /** Counts one answered review: its labels, how long it took, the rules that denied it and its patch size. */
  observeReview(r: ReviewObservation): void {
    this.pendingReviews.push(r);
    if (this.pendingReviews.length >= this.batch) this.flushReviews();
  }

  /** Reviews queued and not yet applied (at most `batch`). */
  get pending(): number {
    return this.pendingReviews.length;
  }

  private flushReviews(): void {
    const queued = this.pendingReviews;
    if (queued.length === 0) return;
    this.pendingReviews = [];
    for (const r of queued) this.apply(r);
  }

  private apply(r: ReviewObservation): void {
    const key = `${r.endpoint}|${r.operation}|${r.kind}|${r.verdict}|${r.dryRun ? 1 : 0}`;
    let counter = this.counted.get(key);
    if (!counter) {
      counter = this.requests.labels({
        endpoint: r.endpoint,
        operation: r.operation,
        kind: r.kind,
        verdict: r.verdict,
        dry_run: String(r.dryRun),
      });
      this.counted.set(key, counter);
    }
    counter.inc();
    let timer = this.timed.get(r.endpoint);
    if (!timer) {
      timer = this.duration.labels({ endpoint: r.endpoint });
      this.timed.set(r.endpoint, timer);
    }
    timer.observe(r.seconds);
    for (let i = 0; i < r.rules.length; i++) {
      const rule = r.rules[i]!;
      if (r.rules.indexOf(rule) !== i) continue; // one count per rule and request
      let denial = this.denied.get(rule);
      if (!denial) {
        denial = this.denials.labels({ rule });
        this.denied.set(rule, denial);
      }
      denial.inc();
    }
    if (r.patchBytes > 0) this.patchBytes.observe(r.patchBytes);
  }

  /** `batch`: reviews queued before they are applied without a scrape (1 applies each at once). */
  constructor(opts: { defaultMetrics?: boolean; batch?: number } = {}) {
    this.batch = Math.max(1, opts.batch ?? 1024);
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }
}

/**
 * Sets a metric from `read()` whenever it is scraped. prom-client calls a metric's collect()
 * before reading it; collect is a constructor option, set late here because the source comes later.
 */
function readAtScrape(metric: Gauge | Counter, read: () => number): void {
  const collect =
    metric instanceof Gauge
      ? (): void => metric.set(read())
      : (): void => {
          metric.reset();
          metric.inc(read());
        };
  Object.assign(metric, { collect });
}
