// Polling for tests that wait on another process or the cluster: one helper for every suite.

export interface UntilOptions {
  /** Give up after this long (default 15 s). */
  readonly timeoutMs?: number;
  /** Pause between attempts (default 50 ms). */
  readonly intervalMs?: number;
  /**
   * Count a thrown error as "not yet" instead of failing at once (the cluster's API while it
   * settles). An error that says nothing can come of waiting (`fatal`, e.g. a control-plane
   * component that died) still fails at once.
   */
  readonly retryErrors?: boolean;
  /** Appended to the timeout error: logs that say why. */
  readonly details?: () => string;
}

/**
 * Calls f until it returns something other than undefined or false, and resolves to that value.
 * The third argument is a timeout in ms or the full options.
 */
export async function until<T>(
  what: string,
  f: () => T | undefined | false | Promise<T | undefined | false>,
  options: number | UntilOptions = {},
): Promise<T> {
  const o: UntilOptions = typeof options === 'number' ? { timeoutMs: options } : options;
  const timeoutMs = o.timeoutMs ?? 15_000;
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = o.retryErrors
      ? await Promise.resolve()
          .then(f)
          .catch((err: unknown) => {
            if (isFatal(err)) throw err;
            return undefined;
          })
      : await f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${o.details ? `\n${o.details()}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, o.intervalMs ?? 50));
  }
}

/** Errors no retry can cure: a control-plane component that died (test/harness/k8s/control-plane.ts). */
function isFatal(err: unknown): boolean {
  return err instanceof Error && err.name === 'ControlPlaneDied';
}
