// How a node daemon's idle figures are read (bench/memory): the median of IDLE_STARTS starts, the
// resident set after V8's idle-time collection, and idle CPU over a window that holds the
// daemon's periodic work.
import { type ChildProcess } from 'node:child_process';
import { type BenchRow } from '../report.js';
import { cpuMicros, stop } from '../webhook.js';
import { IDLE_SETTLE_MS, TARGET, idle, sleep, status } from './instruments.js';

export const SETTLED_MS = 20_000;

/**
 * When a daemon's idle CPU starts to be read: after V8's memory reducer has collected, once, what
 * start-up left (`--trace-gc`: about 12 s after start on Node 20, 30 s on Node 26). In a 30 s
 * window from 3 s those collections read as up to 0.5% of a core more (#43); that part is read on
 * its own and shown beside the row.
 */
export const CPU_FROM_MS = 40_000;

/**
 * How long a daemon's idle CPU is read: two of the agent's longest periods (the 30 s refresh, with
 * its mechanism probe, and the SMC sample), 60 of the device plugin's 1 s device polls.
 */
export const CPU_WINDOW_MS = 60_000;

/**
 * Starts of a daemon whose idle figure is read: one reading 3 s after start moves by about ±1 MB
 * between starts of one build, with where start-up's collections fall, so a node daemon's idle row
 * is the median of this many starts (the range is in its notes).
 */
export const IDLE_STARTS = 3;

/** Idle readings of `n` more starts of a daemon, one after another, each stopped after it. */
export async function moreIdleReadings(
  start: () => Promise<ChildProcess>,
  n: number,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const p = await start();
    try {
      out.push(await idle(p));
    } finally {
      await stop(p);
    }
  }
  return out;
}

interface CpuMark {
  readonly micros: number;
  readonly at: bigint;
}

/** A running child's CPU so far (utime + stime) and when it was read; a child that exited says why. */
function cpuMark(child: ChildProcess): CpuMark {
  status(child, 'VmRSS'); // throws, saying why, if the daemon has exited
  return { micros: cpuMicros(child.pid ?? 0), at: process.hrtime.bigint() };
}

/** CPU used between two marks, in % of one core. */
function cpuBetween(from: CpuMark, to: CpuMark): number {
  return (100 * (to.micros - from.micros)) / (Number(to.at - from.at) / 1e3);
}

export function cpuRow(name: string, cpu: IdleCpu, what: string): BenchRow {
  const percent = cpu.steady;
  return {
    bench: 'memory',
    case: name,
    value: percent,
    unit: '% of a core',
    target: `target ≤ ${TARGET.agentCpu}%: ${percent <= TARGET.agentCpu ? 'met' : 'not met'}; over ${CPU_WINDOW_MS / 1000} s from ${CPU_FROM_MS / 1000} s after start (${what}); ${cpu.startTail.toFixed(2)}% from ${IDLE_SETTLE_MS / 1000} to ${CPU_FROM_MS / 1000} s, with start-up's collections; clock ticks of 10 ms`,
  };
}

export interface IdleCpu {
  /** From IDLE_SETTLE_MS to CPU_FROM_MS: with the collections of what start-up left. */
  readonly startTail: number;
  /** Over CPU_WINDOW_MS from CPU_FROM_MS: what the daemon costs while it idles for days. */
  readonly steady: number;
}

/**
 * A daemon's idle CPU, from IDLE_SETTLE_MS after its start, and its resident set at SETTLED_MS
 * (`settled` is called then).
 */
export async function idleCpu(child: ChildProcess, settled: () => void): Promise<IdleCpu> {
  const start = cpuMark(child);
  await sleep(SETTLED_MS - IDLE_SETTLE_MS);
  settled();
  await sleep(CPU_FROM_MS - SETTLED_MS);
  const from = cpuMark(child);
  await sleep(CPU_WINDOW_MS);
  return { startTail: cpuBetween(start, from), steady: cpuBetween(from, cpuMark(child)) };
}
