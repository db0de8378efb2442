// What an SMC-R pod of this node got, read from the record the CNI plugin wrote for its sandbox
// (in its state dir): one outcome per pod, which ../pod-duty.ts posts as a Kubernetes Event. A
// pod with no record once its grace is over was missed: the plugin never ran for it.
import type { PluginRecord } from '../../native/contract.js';
import { selectionNotEnforced } from './smc.js';
import { LATE_PREFIX } from '../network/late-apply.js';
import { SANDBOX_CONDITIONS, wantsSmcr, type NodePod } from '../pod.js';

export type OutcomeKind = 'applied' | 'partial' | 'tcp' | 'missed' | 'late';

export interface PodOutcome {
  readonly kind: OutcomeKind;
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

/**
 * Whether the pod's sandbox is up, and since when (ms): since the condition's last transition
 * where the kubelet sets it, else since the pod started (it has an IP: its first sandbox is up).
 */
function sandboxSince(pod: NodePod): number | undefined {
  if (!pod.status?.podIP) return undefined;
  const c = pod.status.conditions?.find((x) => SANDBOX_CONDITIONS.includes(x.type));
  if (c) {
    // Between the DEL of a sandbox and the ADD of the next, the pod has no record: not missed.
    if (c.status !== 'True') return undefined;
    if (c.lastTransitionTime) return new Date(c.lastTransitionTime).getTime();
  }
  const t = pod.status.startTime;
  return t ? new Date(t).getTime() : 0;
}

/**
 * A pod whose sandbox is gone or going: it finished (Succeeded, Failed) or is being deleted. The
 * runtime's DEL removed our plugin's record with the sandbox, so the record's absence says nothing.
 */
function sandboxEnding(pod: NodePod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed' || !!pod.metadata?.deletionTimestamp;
}

/**
 * What to tell about this pod now; undefined when nothing (not SMC-R, not started, within grace,
 * or without its record once its sandbox is ending). `recordGoneAt`: when a record seen for this
 * pod was first found gone.
 */
export function judge(
  pod: NodePod,
  record: PluginRecord | undefined,
  now: number,
  graceMs: number,
  recordGoneAt?: number,
): PodOutcome | undefined {
  if (!wantsSmcr(pod)) return undefined;
  if (record?.outcome === 'pending') return unfinished(record, now, graceMs);
  if (record) return fromRecord(record);
  if (sandboxEnding(pod)) return undefined;
  const since = sandboxSince(pod);
  if (since === undefined) return undefined;
  // A record seen before and gone now went with its sandbox (the runtime's DEL): the pod object
  // may not say so yet (its phase, its sandbox condition). Its grace runs from then.
  if (now - Math.max(since, recordGoneAt ?? since) < graceMs) return undefined;
  return {
    kind: 'missed',
    type: 'Warning',
    reason: 'SMCRNotApplied',
    message:
      'SMC-R was not enabled: the erdma-smcr CNI plugin did not run for this pod (it was not chained when the pod started). ' +
      'The pod uses TCP. Fix: check the erdma-smcr agent on this node, then delete the pod so it is recreated.',
  };
}

/**
 * A record the plugin wrote before it entered the pod's netns: its ADD is under way, and the
 * record holds no verdict yet (its mechanism is not chosen). Reproduced first: an agent that read
 * one between the plugin's two writes told the pod SMCRUnavailable with no reason, once for good.
 * One still pending after the grace period is an ADD that never finished.
 */
function unfinished(r: PluginRecord, now: number, graceMs: number): PodOutcome | undefined {
  if (now - r.mtimeMs < graceMs) return undefined;
  return {
    kind: 'missed',
    type: 'Warning',
    reason: 'SMCRNotApplied',
    message:
      `SMC-R was not enabled: the erdma-smcr CNI plugin began for this pod at ${new Date(r.mtimeMs).toISOString()} ` +
      'and did not finish (its record is still pending). The pod uses TCP. ' +
      'Fix: look for the plugin in the container runtime log on this node, then delete the pod so it is recreated.',
  };
}

function fromRecord(r: PluginRecord): PodOutcome {
  const v = recordVerdict(r);
  if (!r.containerId.startsWith(LATE_PREFIX)) return v;
  if (v.kind === 'applied') {
    return {
      kind: 'late',
      type: 'Warning',
      reason: 'SMCRAppliedLate',
      message:
        `SMC-R was enabled at ${new Date(r.mtimeMs).toISOString()}, after the pod started (the CNI plugin was not chained then). ` +
        'Connections opened before stay on TCP; delete the pod so it is recreated to use SMC-R for all.',
    };
  }
  return { ...v, message: `Applied after the pod started: ${v.message}` };
}

/** What the record says of the pod's SMC selection (#93), for the SMCREnabled message. */
function selectionNote(r: PluginRecord): string {
  // The library carries only what loads it (#100: the mechanism of tcp2smc nodes too, by default).
  if (r.selection === 'enforced' && r.mechanism === 'preload')
    return '; connections outside its SMC selection stay on TCP, and so do statically linked programs (Go, busybox), which never load the preload library';
  if (r.selection === 'enforced') return '; connections outside its SMC selection stay on TCP';
  if (r.selection === 'none') return `; ${selectionNotEnforced(r.selectionWhy)}`;
  return '';
}

function recordVerdict(r: PluginRecord): PodOutcome {
  if (r.ipv6Only) {
    return {
      kind: 'tcp',
      type: 'Warning',
      reason: 'SMCRIPv6Only',
      message:
        'SMC-R cannot serve this pod, it uses TCP: its only addresses are IPv6 and SMC-R carries IPv4 only. ' +
        'IPv6 was kept on so the pod stays reachable. Fix: give the pod an IPv4 address (IPv4 or dual-stack pod network).',
    };
  }
  if (r.outcome === 'applied') {
    return {
      kind: 'applied',
      type: 'Normal',
      reason: 'SMCREnabled',
      message: `SMC-R enabled in the pod network namespace (pnet ${r.pnet?.id || 'none'})${selectionNote(r)}`,
    };
  }
  if (r.mechanism === 'none') {
    // The plugin found no way to make the pod's sockets SMC (#69): say what it found, not an OS.
    return {
      kind: 'tcp',
      type: 'Warning',
      reason: 'SMCRUnavailable',
      message:
        'SMC-R was not enabled, the pod uses TCP: no SMC mechanism was active on its node when its network was set up' +
        `${r.mechanismWhy ? ` (${r.mechanismWhy})` : ''}. ` +
        'Fix: see what the node can do (kubectl get node -L smcr.erdma.io/capable,smcr.erdma.io/reason; ' +
        '`erdma-smcr mechanisms` on the node): SMC needs the smc module and net.smc.tcp2smc (Alibaba Cloud Linux 3), ' +
        'IPPROTO_SMC (kernel 6.11+), or the preload library for dynamically linked programs. Then delete the pod so it is recreated.',
    };
  }
  if (r.missing.includes('net.smc.tcp2smc')) {
    // A record of a plugin from before the mechanisms: tcp2smc was the only way.
    return {
      kind: 'tcp',
      type: 'Warning',
      reason: 'SMCRUnavailable',
      message:
        'SMC-R was not enabled, the pod uses TCP: the node kernel has no net.smc.tcp2smc. ' +
        'Fix: run the pod on Alibaba Cloud Linux 3 with kernel 5.10.134-17 or later and the smc module loaded (modprobe smc).',
    };
  }
  const pnetMissing = r.missing.includes('SMC_PNETID');
  return {
    kind: 'partial',
    type: 'Warning',
    reason: 'SMCRPartial',
    message:
      `SMC-R partly enabled; missing: ${r.missing.join(', ') || 'unknown'}. ` +
      (pnetMissing
        ? 'Without the pnet entry SMC-R connections fall back to TCP. Fix: load the smc module on the node and recreate the pod.'
        : 'Connections still use SMC-R; the missing tuning knobs keep their kernel defaults.'),
  };
}
