// The sampling duty: what every SMC-R pod's connections run on, read from the kernel with one
// native call (./smc.ts), as per-pod metrics; connections that fell back to TCP are told as one
// SMCRFallback Event per pod and set of reasons per agent.fallbackEventMs.
import type { Logger } from 'pino';
import type { NativeBinary } from '../../native/binary.js';
import { recordedPods } from '../../native/contract.js';
import type { Clock, Duty } from '../duty.js';
import { Told, type EventSink } from '../events.js';
import type { AgentMetrics } from '../metrics.js';
import { findPodNetns } from '../host.js';
import { type NodePod } from '../pod.js';
import { describePlainTcp } from './programs.js';
import {
  collectPodSmc,
  describeReason,
  reasonLabel,
  unexpectedFallbacks,
  type PodSmc,
} from './smc.js';

export interface SmcDutyOptions {
  readonly binary: NativeBinary;
  /** The plugin's state dir as the agent sees it. */
  readonly stateDir: string;
  readonly hostRoot: string;
  readonly procRoot: string;
  /** The pods of this node (undefined without a pod watch: every recorded pod is read, none told). */
  readonly pods: () => readonly NodePod[] | undefined;
  readonly fallbackEventMs: number;
  readonly events: EventSink;
  readonly metrics: AgentMetrics;
  readonly clock: Clock;
  readonly logger: Logger;
}

export class SmcDuty implements Duty {
  readonly name = 'smc';
  /** The set of fallback reasons told per pod UID. */
  private readonly told: Told;
  /** The programs left on plain TCP told per pod UID (preload). */
  private readonly toldPlain: Told;
  /** The pods read at the last pass. */
  last: PodSmc[] = [];

  constructor(private readonly o: SmcDutyOptions) {
    this.told = new Told(o.clock, o.fallbackEventMs);
    this.toldPlain = new Told(o.clock, o.fallbackEventMs);
  }

  /** A failed sample is logged; it makes no one unready. */
  problem(): undefined {
    return undefined;
  }

  async pass(): Promise<void> {
    const pods = this.o.pods();
    const live = pods ? new Map(pods.map((p) => [p.metadata?.uid ?? '', p])) : undefined;
    const records = recordedPods(this.o.stateDir).filter((r) => !live || live.has(r.uid));
    try {
      this.last = await collectPodSmc(records, {
        binary: this.o.binary,
        hostRoot: this.o.hostRoot,
        byPod: (uid) => findPodNetns(this.o.procRoot, uid),
        procRoot: this.o.procRoot,
      });
    } catch (err) {
      this.o.logger.warn({ err }, 'cannot read the SMC connections of pods');
      this.last = [];
      return;
    }
    this.metrics(this.last);
    for (const p of this.last) {
      const pod = live?.get(p.uid);
      // Loopback connections fall back by design (no RDMA device serves lo): counted, not told.
      if (pod && p.summary && unexpectedFallbacks(p.summary) > 0) await this.tellFallback(pod, p);
      if (pod && p.plainTcpPrograms?.some((x) => x.cause !== 'loaded'))
        await this.tellPlainTcp(pod, p);
    }
    this.told.forgetExcept((uid) => records.some((r) => r.uid === uid));
    this.toldPlain.forgetExcept((uid) => records.some((r) => r.uid === uid));
  }

  private metrics(pods: readonly PodSmc[]): void {
    const m = this.o.metrics;
    m.podConnections.reset();
    m.podFallbacks.reset();
    m.podLoopbackFallbacks.reset();
    m.podBytes.reset();
    m.samplePods.set({ result: 'ok' }, pods.filter((p) => p.summary).length);
    m.samplePods.set({ result: 'error' }, pods.filter((p) => !p.summary).length);
    for (const p of pods) {
      const s = p.summary;
      if (!s) continue;
      const who = { namespace: p.namespace, pod: p.name };
      for (const mode of ['SMCR', 'SMCD', 'TCP'] as const)
        m.podConnections.set({ ...who, mode }, s.byMode[mode]);
      m.podConnections.set({ ...who, mode: 'KEPT' }, s.selectionKept ?? 0);
      for (const [code, n] of Object.entries(s.fallbacks))
        m.podFallbacks.inc({ ...who, reason: reasonLabel(code) }, n);
      if (s.otherFallbacks > 0) m.podFallbacks.inc({ ...who, reason: 'OTHER' }, s.otherFallbacks);
      m.podLoopbackFallbacks.set(who, s.loopbackFallbacks ?? 0);
      m.podBytes.set({ ...who, direction: 'tx' }, s.txBytes);
      m.podBytes.set({ ...who, direction: 'rx' }, s.rxBytes);
    }
  }

  /** Programs the preload library could not reach: one Event per pod and set of programs and causes. */
  private async tellPlainTcp(pod: NodePod, p: PodSmc): Promise<void> {
    const programs = (p.plainTcpPrograms ?? []).filter((x) => x.cause !== 'loaded');
    const key = [...new Set(programs.map((x) => `${x.comm}=${x.cause}`))].sort().join(',');
    if (!this.toldPlain.due(p.uid, key)) return;
    const n = programs.reduce((sum, x) => sum + x.connections, 0);
    const message =
      `${n} TCP connection(s) of this pod are not SMC-R: its node's mechanism is the preload library, which these programs do not run with. ` +
      `${programs.map(describePlainTcp).join(' ')}. See erdma-smcr status --pod ${p.namespace}/${p.name}.`;
    if (await this.o.events.pod(pod, { type: 'Warning', reason: 'SMCRPlainTcp', message }))
      this.toldPlain.told(p.uid, key);
  }

  private async tellFallback(pod: NodePod, p: PodSmc): Promise<void> {
    const s = p.summary!;
    const codes = Object.keys(s.fallbacks).sort();
    const key = codes.join(',') || 'other';
    if (!this.told.due(p.uid, key)) return;
    const reasons = codes.map((c) => {
      const r = describeReason(c);
      return `${r.name} (${c}, ${s.fallbacks[c]} connection(s)): ${r.meaning}`;
    });
    const total = s.byMode.SMCR + s.byMode.SMCD + s.byMode.TCP - (s.loopbackFallbacks ?? 0);
    const message =
      `${unexpectedFallbacks(s)} of ${total} connection(s) fell back to TCP. ${reasons.join(' ') || 'Reason not in the sample.'}` +
      ` See erdma-smcr status --pod ${p.namespace}/${p.name}.`;
    if (await this.o.events.pod(pod, { type: 'Warning', reason: 'SMCRFallback', message }))
      this.told.told(p.uid, key);
  }
}
