// The pods duty: every SMC-R pod of this node judged from what our CNI plugin recorded for it
// (./pods.ts), each outcome told once as an Event on the pod and counted in metrics; a pod the
// plugin missed is given SMC-R late when agent.lateApply is on.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { readRecords } from '../native/contract.js';
import { writeAtomic } from '../util/fs.js';
import type { Clock, Duty, Problem } from './duty.js';
import { Told, type EventSink } from './events.js';
import type { AgentMetrics } from './metrics.js';
import { findPodNetns } from './host.js';
import { lateApply, removeLateRecords, type LateApplyOptions } from './network/late-apply.js';
import { judge, type OutcomeKind, type PodOutcome } from './observe/pod-outcome.js';
import { type NodePod } from './pod.js';

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
  /**
   * Where the outcome told per pod is kept for the next agent process on this node (an update, a
   * crash), which then tells only what changed; undefined: kept in memory only.
   */
  readonly toldFile?: string;
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

  /** The Told version last written to toldFile, and the last error writing it. */
  private saved = 0;
  private saveError: string | undefined;

  constructor(private readonly o: PodsDutyOptions) {
    this.told = new Told(o.clock);
    if (o.toldFile) this.told.restore(readTold(o.toldFile, o.logger));
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
    this.saveTold();
  }

  /** Writes what was told to toldFile when it changed; a failure is logged once and retried. */
  private saveTold(): void {
    const file = this.o.toldFile;
    if (!file || this.told.version === this.saved) return;
    try {
      mkdirSync(dirname(file), { recursive: true });
      writeAtomic(file, JSON.stringify({ told: this.told.values() }), 0o644);
      this.saved = this.told.version;
      this.saveError = undefined;
    } catch (err) {
      const reason = (err as Error).message;
      if (reason !== this.saveError)
        this.o.logger.warn(
          { file, reason },
          'cannot keep what was told of pods; an agent started after this one tells it again',
        );
      this.saveError = reason;
    }
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

/**
 * What an earlier agent on this node told, by pod UID, from toldFile: nothing when there is no
 * file; nothing, and a warning, when it cannot be read (the outcomes are then told again).
 */
function readTold(file: string, logger: Logger): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      logger.warn({ file, reason: (err as Error).message }, 'cannot read what was told of pods');
    return {};
  }
  try {
    const told = (JSON.parse(text) as { told?: unknown }).told;
    if (told && typeof told === 'object' && !Array.isArray(told))
      return Object.fromEntries(
        Object.entries(told).filter((e): e is [string, string] => typeof e[1] === 'string'),
      );
  } catch {
    // reported below
  }
  logger.warn({ file }, "what was told of pods is not this agent's JSON; telling it again");
  return {};
}
