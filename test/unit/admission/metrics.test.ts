// The per-review metrics are queued and applied before each scrape: what a scrape shows must be
// exactly what applying every review at once shows, and the queue must stay bounded without scrapes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WebhookMetrics, type ReviewObservation } from '../../../src/admission/metrics.js';

const observation = fc.record({
  endpoint: fc.constantFrom('mutate', 'validate'),
  operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE'),
  kind: fc.constantFrom('Pod', 'Deployment', 'other'),
  verdict: fc.constantFrom('allowed', 'denied', 'skipped'),
  dryRun: fc.boolean(),
  seconds: fc.double({ min: 0, max: 2, noNaN: true }),
  rules: fc.array(fc.constantFrom('host-network', 'ip-family', 'kernel-version'), { maxLength: 3 }),
  patchBytes: fc.constantFrom(0, 100, 900, 5000),
});

/** The per-review series of a scrape (the registry has no default metrics here). */
async function scrape(m: WebhookMetrics): Promise<string> {
  return m.registry.metrics();
}

describe('WebhookMetrics: per-review updates', () => {
  it('a scrape shows what applying each review at once shows, whenever it comes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(observation, { maxLength: 40 }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 50 }),
        async (bursts, batch) => {
          const queued = new WebhookMetrics({ defaultMetrics: false, batch });
          const immediate = new WebhookMetrics({ defaultMetrics: false, batch: 1 });
          for (const burst of bursts) {
            for (const r of burst as ReviewObservation[]) {
              queued.observeReview(r);
              immediate.observeReview(r);
              expect(immediate.pending).toBe(0);
            }
            expect(await scrape(queued)).toBe(await scrape(immediate));
            expect(queued.pending).toBe(0);
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('counts every review of a burst, and sees the ones after a scrape at the next', async () => {
    const m = new WebhookMetrics({ defaultMetrics: false });
    const r: ReviewObservation = {
      endpoint: 'mutate',
      operation: 'CREATE',
      kind: 'Pod',
      verdict: 'denied',
      dryRun: false,
      seconds: 0.002,
      rules: ['host-network', 'host-network'],
      patchBytes: 0,
    };
    for (let i = 0; i < 3; i++) m.observeReview(r);
    expect(await scrape(m)).toMatch(
      /erdma_smcr_admission_requests_total\{endpoint="mutate",operation="CREATE",kind="Pod",verdict="denied",dry_run="false"\} 3\n/,
    );
    m.observeReview(r);
    m.observeReview(r);
    const text = await scrape(m);
    expect(text).toMatch(/erdma_smcr_admission_requests_total\{[^}]*verdict="denied"[^}]*\} 5\n/);
    expect(text).toMatch(/erdma_smcr_admission_denials_total\{rule="host-network"\} 5\n/); // once per review
    expect(text).toMatch(
      /erdma_smcr_admission_duration_seconds_bucket\{le="0.0025",endpoint="mutate"\} 5\n/,
    );
  });

  it('without scrapes, at most one batch waits: the rest is applied as it comes', async () => {
    const m = new WebhookMetrics({ defaultMetrics: false, batch: 64 });
    const r: ReviewObservation = {
      endpoint: 'validate',
      operation: 'CREATE',
      kind: 'Pod',
      verdict: 'allowed',
      dryRun: true,
      seconds: 0.0001,
      rules: [],
      patchBytes: 0,
    };
    for (let i = 0; i < 1000; i++) {
      m.observeReview(r);
      expect(m.pending).toBeLessThan(64);
    }
    expect(m.pending).toBe(1000 % 64);
    expect(await scrape(m)).toMatch(/dry_run="true"\} 1000\n/);
  });
});
