// Latency at a fixed request rate, for the webhook benchmark: nghttp2's h2load sends the reviews
// on one keep-alive HTTP/1.1 connection at times set by a timing script, and logs each response
// time in microseconds.
//
// Why not autocannon, which the throughput rows use: its `overallRate` lets each connection send
// its quota for the second back to back as soon as the second starts and then idle, so a "fixed
// 500 req/s" is a burst at full load every second, and its p99 is the queue in that burst (a
// throughput figure in disguise). It also records latency in whole milliseconds, while the
// latencies here are a few tenths of one.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { median } from './report.js';

const run = promisify(execFile);

/** The authority h2load puts in SNI and the Host header; it connects to 127.0.0.1 (`--connect-to`). */
const URI = 'https://erdma-smcr-webhook.erdma-smcr.svc/mutate';

export interface PacedLoad {
  /** Every response time, ms, ascending. */
  readonly latencies: readonly number[];
  /** Requests per second actually sent: the requests over the time from the first to the last. */
  readonly rate: number;
  /** Responses that were not 200, and requests of the script that got no response at all. */
  readonly errors: number;
}

/** The nearest-rank percentile (0 < p ≤ 1) of ascending values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** h2load's version line, or an error that says how to install it. */
export async function h2loadVersion(): Promise<string> {
  try {
    return (await run('h2load', ['--version'])).stdout.trim();
  } catch {
    throw new Error(
      'the fixed-rate rows need h2load: apt-get install nghttp2-client (`.ci/run` installs it)',
    );
  }
}

/** How much later than asked h2load's timer fires, ms, before a server is calibrated (see timingScript). */
export const DEFAULT_LATENESS = 0.3;

/**
 * Writes a timing script for `seconds` at `rate` requests per second into `dir`, and returns its path.
 *
 * h2load arms the timer for each request when the previous one fires, and libev sleeps in whole
 * milliseconds, so every gap comes out longer than asked (by `lateness` ms on average) and a
 * fractional gap is rounded up: at 2 ms gaps the rate is about 430/s, not 500. For 500/s the
 * script mixes 1 ms and 2 ms gaps, spread out, a fraction of them 1 ms such that the mean gap,
 * each lengthened by `lateness`, is the nominal one. How late the timer fires depends on when the
 * previous response woke h2load, so on the server: `calibrate` measures it per server.
 */
export function timingScript(
  dir: string,
  rate: number,
  seconds: number,
  lateness = DEFAULT_LATENESS,
): string {
  const count = Math.round(rate * seconds);
  const nominal = 1000 / rate;
  // Gaps of a whole number of ms, a fraction `short` of them one ms shorter than the rest, so that
  // the mean, each gap lengthened by `lateness`, is the nominal gap.
  const long = Math.max(1, Math.ceil(nominal));
  const short = Math.min(1, Math.max(0, long + lateness - nominal));
  const lines: string[] = [];
  let at = 0;
  let owed = 0;
  for (let i = 0; i < count; i++) {
    lines.push(`${at.toFixed(3)}\t${URI}`);
    owed += short;
    const gap = owed >= 1 && long > 1 ? long - 1 : long;
    if (gap < long) owed -= 1;
    at += gap;
  }
  const path = join(dir, `timing-${rate}-${seconds}-${lateness.toFixed(3)}.txt`);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** The offsets of a timing script's requests, ms from the first. */
function scriptOffsets(script: string): number[] {
  return readFileSync(script, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => Number(l.split('\t')[0]));
}

/** The mean gap between the requests of a timing script, ms. */
export function plannedGap(script: string): number {
  const at = scriptOffsets(script);
  return at.length > 1 ? at[at.length - 1]! / (at.length - 1) : Number.NaN;
}

/**
 * How late h2load's timer fires against the server on `port` at `rate`, ms (`timingScript`'s
 * `lateness`): short loads (which also warm the server) until one reaches `rate` within 1%, or
 * `tries` have run. A slower response wakes h2load later within its millisecond, so one script for
 * every server would load a slower server at a lower rate than a faster one.
 */
export async function calibrate(
  port: number,
  bodyFile: string,
  dir: string,
  rate: number,
  tries = 4,
  seconds = 2,
): Promise<number> {
  let lateness = DEFAULT_LATENESS;
  for (let i = 0; i < tries; i++) {
    const script = timingScript(dir, rate, seconds, lateness);
    const reached = (await pacedLoad(port, bodyFile, script, join(dir, 'calibrate.log'))).rate;
    if (!(reached > 0) || Math.abs(reached - rate) <= rate / 100) break;
    // The gaps came out `1000 / reached` ms long on average where the script asked `plannedGap`.
    lateness = Math.max(0, 1000 / reached - plannedGap(script));
  }
  return lateness;
}

/** One load: the timing script's requests, POSTing `bodyFile`, on one connection to `port`. */
export async function pacedLoad(
  port: number,
  bodyFile: string,
  script: string,
  logFile: string,
): Promise<PacedLoad> {
  rmSync(logFile, { force: true }); // h2load appends to it
  await run(
    'h2load',
    [
      '--h1',
      '--clients',
      '1',
      '--data',
      bodyFile,
      '--header',
      'content-type: application/json',
      `--connect-to=127.0.0.1:${port}`,
      '--timing-script-file',
      script,
      '--log-file',
      logFile,
    ],
    { maxBuffer: 1 << 20 },
  );
  // The log: start (µs since the epoch), status, response time (µs), one request a line.
  const rows = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\t').map(Number));
  const asked = scriptOffsets(script).length;
  const starts = rows.map((r) => r[0]!);
  const span = (Math.max(...starts) - Math.min(...starts)) / 1e6;
  return {
    latencies: rows.map((r) => r[2]! / 1000).sort((a, b) => a - b),
    rate: span > 0 ? (rows.length - 1) / span : 0,
    errors: rows.filter((r) => r[1] !== 200).length + Math.max(0, asked - rows.length),
  };
}

/**
 * Below this share of the median rate of a server's rounds, a round fell behind its script: h2load
 * itself was held up (the machine stalled), and the round measured the stall as much as the
 * server. The calibration can miss the nominal rate by about 5% for a whole run, so rounds are
 * compared with their own server's median, not with the nominal rate.
 */
export const STALLED_SHARE = 0.95;

/** The first round (by index) whose rate is under `share` × the median of `rates`, or -1. */
export function stalledRound(rates: readonly number[], share = STALLED_SHARE): number {
  const typical = median(rates);
  return rates.findIndex((r) => r < share * typical);
}
