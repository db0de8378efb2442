// bench scale's reading of serve's own review timing (#72): the share of the reviews between two
// scrapes that serve decided within a bound, from the cumulative histogram's buckets.
import { describe, expect, it } from 'vitest';
import { durationBuckets, handledWithin } from '../../../bench/scale.js';
import { WebhookMetrics } from '../../../src/admission/metrics.js';

const scrape = (m: WebhookMetrics): Promise<string> => m.registry.metrics();

describe('bench scale: serve timing', () => {
  it('reads the mutate buckets and leaves other endpoints out', () => {
    const text = [
      'erdma_smcr_admission_duration_seconds_bucket{le="0.0005",endpoint="mutate"} 7',
      'erdma_smcr_admission_duration_seconds_bucket{le="0.0005",endpoint="validate"} 9',
      'erdma_smcr_admission_duration_seconds_bucket{le="+Inf",endpoint="mutate"} 10',
    ].join('\n');
    expect([...durationBuckets(text)]).toEqual([
      ['0.0005', 7],
      ['+Inf', 10],
    ]);
  });

  it('counts only the reviews between the two scrapes, from the real metrics text', async () => {
    const m = new WebhookMetrics({ defaultMetrics: false, batch: 1 });
    const observe = (seconds: number): void =>
      m.observeReview({
        endpoint: 'mutate',
        operation: 'CREATE',
        kind: 'Pod',
        verdict: 'allowed',
        dryRun: false,
        rules: [],
        patchBytes: 0,
        seconds,
      });
    for (let i = 0; i < 5; i++) observe(0.02); // before the window: slow, must not count
    const before = await scrape(m);
    for (const s of [0.0001, 0.0002, 0.0007, 0.003]) observe(s);
    expect(handledWithin(before, await scrape(m), ['0.0005', '0.001'])).toEqual([0.5, 0.75]);
  });
});
