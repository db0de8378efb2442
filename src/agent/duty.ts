// The shape every duty of the node agent has, and the clock and schedule the orchestrator runs
// them on (src/agent/agent.ts). A duty does one thing on its own timer: a pass, and what is not in
// place when it is not (its problem, which makes the agent unready). Duties never start timers of
// their own, so a test drives them pass by pass with a clock it moves itself.

/** One duty of the agent. */
export interface Duty {
  /** Its name in the readiness answer and the logs: `labels`, `pnet`, `cni`, `pods`... */
  readonly name: string;
  /** What is not in place, or undefined when everything is. */
  problem(): string | undefined;
  /** Once, before the first pass (a watch to start, a file to install). */
  start?(): Promise<void>;
  /** One pass. A pass that throws is logged by the schedule and the duty runs again later. */
  pass(): Promise<void>;
  close?(): Promise<void>;
}

/** Time, as the agent reads it: real in the process, moved by hand in tests. */
export interface Clock {
  now(): number;
  /** Runs `f` after `ms` (the process is not kept alive for it). */
  after(ms: number, f: () => void): { cancel(): void };
}

export const realClock: Clock = {
  now: () => Date.now(),
  after(ms, f) {
    const t = setTimeout(f, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/** A problem of one duty, or of none. */
export type Problem = string | undefined;

/**
 * Runs passes on a period, one at a time: a pass asked for while one runs shares it. A failure is
 * reported to `onError` and the schedule goes on.
 */
export class Schedule {
  private running: Promise<void> | undefined;
  private timer: { cancel(): void } | undefined;
  private closed = false;

  constructor(
    private readonly run: () => Promise<void>,
    private readonly periodMs: number,
    private readonly clock: Clock,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Runs a pass now (or joins the one running) and plans the next one a period after it. */
  now(): Promise<void> {
    this.running ??= this.run()
      .catch(this.onError)
      .finally(() => {
        this.running = undefined;
        this.plan();
      });
    return this.running;
  }

  /** Plans the first pass after `delayMs`. */
  startIn(delayMs: number): void {
    this.plan(delayMs);
  }

  /** Plans a pass after `delayMs`, replacing the one planned: calls in a burst make one pass. */
  soon(delayMs: number): void {
    if (!this.running) this.plan(delayMs);
  }

  private plan(delayMs = this.periodMs): void {
    this.timer?.cancel();
    if (this.closed) return;
    this.timer = this.clock.after(delayMs, () => void this.now());
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    await this.running;
  }
}

/** The problems of duties as the readiness answer says them: `name: problem; ...`, or undefined. */
export function readiness(duties: readonly Duty[]): Problem {
  const parts = duties.flatMap((d) => {
    const p = d.problem();
    return p === undefined ? [] : [`${d.name}: ${p}`];
  });
  return parts.length > 0 ? parts.join('; ') : undefined;
}
