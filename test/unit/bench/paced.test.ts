// The webhook benchmark's fixed-rate load (bench/paced.ts): the timing script it hands h2load, the
// percentile it reports, and a real h2load run against the real webhook over TLS, whose
// per-request log the bench parses (start in µs, status, response time in µs). Timings here only
// have to be plausible; the figures belong to `npm run bench`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { percentile, plannedGap, stalledRound, timingScript } from '../../../bench/paced.js';

function h2loadMissing(): string {
  try {
    execFileSync('h2load', ['--version'], { stdio: 'ignore' });
    return '';
  } catch {
    return 'h2load missing (apt-get install nghttp2-client)';
  }
}

const why = h2loadMissing();
if (why && process.env.CI) throw new Error(`the fixed-rate bench suite cannot run in CI: ${why}`);

const dir = mkdtempSync(join(tmpdir(), 'paced-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The timing script's offsets, ms. */
const offsets = (path: string): number[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => Number(l.split('\t')[0]));

describe('stalledRound', () => {
  it('finds a round whose rate fell under 95% of its server median, not a run the calibration set 5% off', () => {
    expect(stalledRound([500, 498, 503, 440, 501])).toBe(3);
    expect(stalledRound([470, 468, 472, 465, 471])).toBe(-1); // a whole run below 500/s is the calibration, not a stall
    expect(stalledRound([528, 530, 455, 526])).toBe(2);
    expect(stalledRound([500, 476, 500])).toBe(-1); // 95.2% of the median
    expect(stalledRound([])).toBe(-1);
  });
});

describe('timingScript', () => {
  it('schedules rate × seconds requests from 0, in whole-ms gaps that average the nominal gap once each is 0.3 ms late', () => {
    const at = offsets(timingScript(dir, 500, 4));
    expect(at).toHaveLength(2000);
    expect(at[0]).toBe(0);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(new Set(gaps)).toEqual(new Set([1, 2]));
    const late = gaps.map((g) => g + 0.3);
    expect(late.reduce((a, b) => a + b, 0) / late.length).toBeCloseTo(2, 2);
    // The short gaps are spread out, never two in a row.
    expect(gaps.some((g, i) => g === 1 && gaps[i + 1] === 1)).toBe(false);
  });

  it('writes the mix for the lateness it is given, and plannedGap reads the mean gap back', () => {
    for (const lateness of [0, 0.45, 0.8]) {
      const script = timingScript(dir, 500, 2, lateness);
      const gaps = offsets(script)
        .slice(1)
        .map((t, i, a) => t - (i === 0 ? 0 : a[i - 1]!));
      expect(gaps.every((g) => g === 1 || g === 2)).toBe(true);
      expect(plannedGap(script) + lateness).toBeCloseTo(2, 2);
    }
    // A lateness of a whole gap cannot be made up: every gap is the shortest, 1 ms.
    expect(plannedGap(timingScript(dir, 500, 1, 1.5))).toBe(1);
  });

  it('uses one gap for a rate whose gap is a whole ms plus the lateness', () => {
    const gaps = offsets(timingScript(dir, 1000 / 3.3, 1)).slice(0, 50);
    expect(new Set(gaps.slice(1).map((t, i) => t - gaps[i]!))).toEqual(new Set([3]));
  });

  it('names the webhook Service in every line (SNI and Host), so h2load connects with --connect-to only', () => {
    const lines = readFileSync(timingScript(dir, 100, 1), 'utf8')
      .trim()
      .split('\n');
    expect(
      lines.every((l) => l.endsWith('\thttps://erdma-smcr-webhook.erdma-smcr.svc/mutate')),
    ).toBe(true);
  });
});

describe('percentile', () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  it('is the nearest rank', () => {
    expect(percentile(xs, 0.5)).toBe(50);
    expect(percentile(xs, 0.99)).toBe(99);
    expect(percentile(xs, 1)).toBe(100);
    expect(percentile(xs, 0.001)).toBe(1);
    expect(percentile([7], 0.99)).toBe(7);
  });
  it('is NaN for no values', () => {
    expect(percentile([], 0.5)).toBeNaN();
  });
});
