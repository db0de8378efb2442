// A prepared claim's device status (./device-status.ts) written to its ResourceClaim when it
// changed, with a failed write tried again after STATUS_RETRY_MS and logged once per reason: the
// DRA driver's bookkeeping of what it last told the API, apart from its gRPC server (./plugin.ts).
import type { Logger } from 'pino';
import type { KubeClient } from '../cluster/client.js';
import type { RdmaDevice } from '../devices/discovery.js';
import type { PreparedClaim } from './claim.js';
import { applyDeviceStatuses, deviceStatuses, statusKey } from './device-status.js';

/**
 * How long a claim's device status that could not be written waits before the next try (the
 * driver scans every second: RBAC missing, or a claim already gone, must not cost a write and a
 * log line a second). A changed status is tried at once.
 */
export const STATUS_RETRY_MS = 60_000;

export interface ClaimStatusWriterOptions {
  readonly client: KubeClient;
  readonly logger: Logger;
  /** The node's SMC mechanism as its label says it (the claims' device status carries it). */
  readonly mechanism?: () => string;
  readonly now?: () => number;
  /** Told of each status written (the driver's counters). */
  readonly onWritten?: () => void;
}

export class ClaimStatusWriter {
  /** Each prepared claim's device status as last applied (by UID). */
  private readonly written = new Map<string, string>();
  /** A claim's status that failed: which, when, and why (logged once per reason). */
  private readonly failed = new Map<string, { key: string; at: number; why: string }>();
  /** The last device status write that failed, or undefined. */
  problem: string | undefined;

  constructor(private readonly o: ClaimStatusWriterOptions) {}

  /**
   * Writes the claim's device status when it differs from what was last written; a failure is
   * kept in `statusProblem` and logged, never the pod's failure (the status is for people).
   */
  async write(claim: PreparedClaim, devices: readonly RdmaDevice[]): Promise<void> {
    const statuses = deviceStatuses(
      claim,
      new Map(devices.map((d) => [d.name, d])),
      this.o.mechanism?.() ?? 'unknown',
      new Date((this.o.now ?? Date.now)()),
    );
    const k = statusKey(statuses);
    if (this.written.get(claim.uid) === k) return;
    const now = (this.o.now ?? Date.now)();
    const failed = this.failed.get(claim.uid);
    if (failed?.key === k && now - failed.at < STATUS_RETRY_MS) return;
    try {
      await applyDeviceStatuses(this.o.client, claim, statuses);
      this.written.set(claim.uid, k);
      this.failed.delete(claim.uid);
      this.o.onWritten?.();
      this.problem = undefined;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      this.problem = `cannot write the device status of ResourceClaim ${claim.namespace}/${claim.name}: ${why}`;
      if (failed?.why !== why)
        this.o.logger.warn(
          { claim: `${claim.namespace}/${claim.name}`, retryMs: STATUS_RETRY_MS },
          this.problem,
        );
      this.failed.set(claim.uid, { key: k, at: now, why });
    }
  }

  /** A claim unprepared: nothing of it is kept. */
  forget(uid: string): void {
    this.written.delete(uid);
    this.failed.delete(uid);
  }
}
