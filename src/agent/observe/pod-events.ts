// The pods duty: every SMC-R pod of this node judged from what our CNI plugin recorded for it
// (./pods.ts), each outcome told once as an Event on the pod and counted in metrics; a pod the
// plugin missed is given SMC-R late when agent.lateApply is on.
import type { Logger } from 'pino';
import { readRecords } from '../../native/contract.js';
import type { Clock, Duty, Problem } from '../duty.js';
import { Told, type EventSink } from '../events.js';
import type { AgentMetrics } from '../metrics.js';
import {
  findPodNetns,
  judge,
  lateApply,
  type NodePod,
  removeLateRecords,
  type LateApplyOptions,
  type OutcomeKind,
  type PodOutcome,
} from './pods.js';

/** The pods of this node: a watch in the agent, a fixed list in tests. */
export interface PodSource {
  /** Lists, then keeps up to date; resolves false when the first list did not come in time. */
  start(): Promise<boolean>;
  objects(): readonly NodePod[];
  /** Listed at least once. */
  readonly synced: boolean;
  /** Listed, and the watch has not broken since: a pod missing from objects() has left. */
  readonly fresh: boolean;
  close(): Promise<void>;
}

export interface PodsDutyOptions {
  /** Undefined when the agent has no API server or no node name (`missing` says which). */
  readonly source: PodSource | undefined;
  readonly missing?: string;
  /** The plugin's state dir as the agent sees it. */
  readonly stateDir: string;
  readonly procRoot: string;
  readonly podGraceMs: number;
  /** Apply SMC-R to a pod the plugin missed (agent.lateApply). */
  readonly lateApply: boolean;
  readonly late: LateApplyOptions;
  readonly events: EventSink;
  readonly metrics: AgentMetrics;
  readonly clock: Clock;
  readonly logger: Logger;
}

export class PodsDuty implements Duty {
  readonly name = 'pods';
  /** The outcome told per pod UID. */
  private readonly told: Told;
  /** Pods a late apply was tried for (once each). */
  private readonly lateTried = new Set<string>();
  /** Pods whose plugin record was seen; with the time it was first found gone, once it is. */
  private readonly recordSeen = new Map<string, number | undefined>();

  constructor(private readonly o: PodsDutyOptions) {
    this.told = new Told(o.clock);
  }

  problem(): Problem {
    const s = this.o.source;
    if (!s) return this.o.missing;
    if (!s.synced) return 'pods on this node not listed yet';
    return s.fresh ? undefined : 'pod watch broken; retrying';
  }

  async start(): Promise<void> {
    await this.o.source?.start();
  }

  /** The pods of this node as last listed (undefined without a pod source). */
  pods(): readonly NodePod[] | undefined {
    return this.o.source?.objects();
  }

  async pass(): Promise<void> {
    const source = this.o.source;
    if (!source?.synced) return;
    const records = readRecords(this.o.stateDir);
    const now = this.o.clock.now();
    const counts: Record<OutcomeKind, number> = {
      applied: 0,
      partial: 0,
      tcp: 0,
      missed: 0,
      late: 0,
    };
    const live = new Set<string>();
    for (const pod of source.objects()) {
      const uid = pod.metadata?.uid ?? '';
      live.add(uid);
      const record = records.get(uid);
      let v = judge(pod, record, now, this.o.podGraceMs, this.recordGoneAt(uid, record, now));
      if (!v) continue;
      if (v.kind === 'missed' && this.o.lateApply && !this.lateTried.has(uid))
        v = await this.tryLate(pod, v);
      counts[v.kind]++;
      if (this.told.due(uid, v.reason) && (await this.o.events.pod(pod, v)))
        this.told.told(uid, v.reason);
    }
    this.forgetGone(live, now, source.fresh);
    for (const [k, n] of Object.entries(counts)) this.o.metrics.pods.set({ outcome: k }, n);
  }

  /** When a record seen for this pod was first found gone (undefined: there, or never seen). */
  private recordGoneAt(uid: string, record: unknown, now: number): number | undefined {
    if (record) this.recordSeen.set(uid, undefined);
    else if (this.recordSeen.has(uid) && this.recordSeen.get(uid) === undefined)
      this.recordSeen.set(uid, now);
    return this.recordSeen.get(uid);
  }

  /** Drops what is kept for pods that left this node, and (from a current list only) their late records. */
  private forgetGone(live: ReadonlySet<string>, now: number, fresh: boolean): void {
    this.told.forgetExcept((uid) => live.has(uid));
    for (const uid of [...this.lateTried]) if (!live.has(uid)) this.lateTried.delete(uid);
    for (const uid of [...this.recordSeen.keys()]) if (!live.has(uid)) this.recordSeen.delete(uid);
    // A broken watch must not make live pods look gone.
    if (!fresh) return;
    const removed = removeLateRecords(this.o.stateDir, live, now - this.o.podGraceMs);
    if (removed.length > 0)
      this.o.logger.info(
        { files: removed },
        'removed late-apply records of pods that left this node',
      );
  }

  private async tryLate(pod: NodePod, missed: PodOutcome): Promise<PodOutcome> {
    const uid = pod.metadata?.uid ?? '';
    const netns = findPodNetns(this.o.procRoot, uid);
    // No process yet (or no hostPID): tell now, try again next pass.
    if (!netns)
      return {
        ...missed,
        message: `${missed.message} (no process of the pod found to apply it late)`,
      };
    this.lateTried.add(uid);
    const err = await lateApply(pod, netns, this.o.late);
    if (err !== undefined)
      return {
        ...missed,
        message: `${missed.message} Applying it late failed: ${err.slice(0, 300)}`,
      };
    const record = readRecords(this.o.stateDir).get(uid);
    return (record && judge(pod, record, 0, 0)) ?? missed;
  }

  async close(): Promise<void> {
    await this.o.source?.close();
  }
}
