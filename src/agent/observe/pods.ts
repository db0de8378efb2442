// Tells users when an SMC-R pod on this node stays on TCP. The CNI plugin records what it did
// per pod sandbox in its state dir; this reads those records for the pods of this node and turns
// each outcome into one Kubernetes Event on the pod (and per-node counts in metrics). A pod the
// plugin never saw (it was not chained when the pod started) can be fixed late: the settings are
// applied to its running network namespace, and the Event says earlier connections stay on TCP.
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { V1ObjectMeta, V1Pod, V1PodSpec, V1PodStatus } from '@kubernetes/client-node';
import { OWN_PREFIX, SMCR_ANNOTATION } from '../../constants.js';
import type { NativeBinary } from '../../native/binary.js';
import type { PluginRecord } from '../../native/contract.js';
import { parseGoBool } from '../../policy/parse-bool.js';
import { pluginEntry, PLUGIN_TYPE, type PluginEntryOptions } from '../network/cni-install.js';

export type OutcomeKind = 'applied' | 'partial' | 'tcp' | 'missed' | 'late';

export interface PodOutcome {
  readonly kind: OutcomeKind;
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

/**
 * What the agent keeps of each pod of its node: the fields its duties read (#43). It watches every
 * pod of the node, whatever the pod asks for, and a pod as the API server sends it (managedFields,
 * the whole spec, each container's status) is many times this. A V1Pod is one, whole.
 */
export interface NodePod {
  readonly metadata?: Pick<
    V1ObjectMeta,
    'name' | 'namespace' | 'uid' | 'resourceVersion' | 'deletionTimestamp' | 'annotations'
  >;
  readonly spec?: Pick<V1PodSpec, 'hostNetwork'>;
  readonly status?: Pick<V1PodStatus, 'phase' | 'podIP' | 'startTime' | 'conditions'>;
}

/** Only the keys of `o` whose values are defined: a kept pod holds no empty slots. */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/**
 * A pod as the agent keeps it: the fields of NodePod; of its annotations, the one a user writes
 * and ours (what our CNI plugin reads when the agent applies SMC-R late); of its conditions, the
 * sandbox's.
 */
export function keptPod(pod: V1Pod): NodePod {
  const md = pod.metadata ?? {};
  const annotations = Object.entries(md.annotations ?? {}).filter(
    ([k]) => k === SMCR_ANNOTATION || k.startsWith(OWN_PREFIX),
  );
  const st = pod.status ?? {};
  const conditions = (st.conditions ?? [])
    .filter((c) => SANDBOX_CONDITIONS.includes(c.type))
    .map((c) =>
      defined({ type: c.type, status: c.status, lastTransitionTime: c.lastTransitionTime }),
    );
  return {
    metadata: defined({
      name: md.name,
      namespace: md.namespace,
      uid: md.uid,
      resourceVersion: md.resourceVersion,
      deletionTimestamp: md.deletionTimestamp,
      annotations: annotations.length > 0 ? Object.fromEntries(annotations) : undefined,
    }),
    spec: pod.spec?.hostNetwork ? { hostNetwork: true } : {},
    status: defined({
      phase: st.phase,
      podIP: st.podIP,
      startTime: st.startTime,
      conditions: conditions.length > 0 ? conditions : undefined,
    }),
  };
}

export function wantsSmcr(pod: NodePod): boolean {
  return (
    parseGoBool(pod.metadata?.annotations?.[SMCR_ANNOTATION] ?? '') === true &&
    pod.spec?.hostNetwork !== true
  );
}

/**
 * The kubelet's condition for a pod whose sandbox is made and its network set up (KEP-3085:
 * PodReadyToStartContainers, beta and on since 1.29; PodHasNetwork in 1.25-1.26). It turns False
 * when the sandbox is gone (a crash, a node reboot) and True again, with a new transition time,
 * once the runtime has made it again, our plugin's ADD included.
 */
const SANDBOX_CONDITIONS: readonly string[] = ['PodReadyToStartContainers', 'PodHasNetwork'];

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

/** Container ID the agent's late apply records under (a runtime never uses it). */
export const LATE_PREFIX = 'late-';

/**
 * Removes the records of late applies for pods that left this node. The runtime's DEL for such a
 * pod names its real sandbox, never `late-<uid>`, so nothing else would ever remove them. Only
 * records older than `olderThanMs` go (a pass never races a record being written). Returns the
 * removed file names.
 */
export function removeLateRecords(
  stateDir: string,
  live: ReadonlySet<string>,
  olderThanMs: number,
): string[] {
  if (!existsSync(stateDir)) return [];
  const removed: string[] = [];
  for (const f of readdirSync(stateDir)) {
    // <containerId>_<ifname>.json, the plugin's record name (native/src/cni.c)
    const sep = f.lastIndexOf('_');
    const uid =
      f.startsWith(LATE_PREFIX) && f.endsWith('.json') && sep > LATE_PREFIX.length
        ? f.slice(LATE_PREFIX.length, sep)
        : '';
    if (uid === '' || live.has(uid)) continue;
    const path = join(stateDir, f);
    try {
      if (statSync(path).mtimeMs >= olderThanMs) continue;
      rmSync(path);
      removed.push(f);
    } catch {
      // gone already
    }
  }
  return removed;
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
      message: `SMC-R enabled in the pod network namespace (pnet ${r.pnet?.id || 'none'})`,
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

/** A process of the pod (found by its UID in the cgroup path) and its network namespace. */
export function findPodNetns(procRoot: string, podUid: string): string | undefined {
  const needles = [`pod${podUid}`, `pod${podUid.replace(/-/g, '_')}`];
  let hostNet = '';
  try {
    hostNet = readlinkSync(join(procRoot, 'self', 'ns', 'net'));
  } catch {
    // unknown: accept any
  }
  for (const pid of readdirSync(procRoot).filter((p) => /^\d+$/.test(p))) {
    try {
      const cg = readFileSync(join(procRoot, pid, 'cgroup'), 'utf8');
      if (!needles.some((n) => cg.includes(n))) continue;
      const ns = join(procRoot, pid, 'ns', 'net');
      if (readlinkSync(ns) === hostNet) continue;
      return ns;
    } catch {
      // the process went away
    }
  }
  return undefined;
}

export interface LateApplyOptions extends PluginEntryOptions {
  readonly binary: NativeBinary;
}

/**
 * Runs our CNI plugin's ADD against the pod's live netns, as the runtime would have: the same
 * code applies the same settings and writes the same record. Resolves with why it failed, or
 * undefined when it succeeded.
 */
export async function lateApply(
  pod: NodePod,
  netns: string,
  o: LateApplyOptions,
): Promise<string | undefined> {
  const md = pod.metadata ?? {};
  const conf = {
    cniVersion: '1.0.0',
    name: 'erdma-smcr-late',
    ...pluginEntry(o),
    type: PLUGIN_TYPE,
    runtimeConfig: { 'io.kubernetes.cri.pod-annotations': md.annotations ?? {} },
    prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: netns }], ips: [] },
  };
  const env = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: `${LATE_PREFIX}${md.uid ?? 'unknown'}`,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: `K8S_POD_NAMESPACE=${md.namespace ?? ''};K8S_POD_NAME=${md.name ?? ''};K8S_POD_UID=${md.uid ?? ''};IgnoreUnknown=1`,
  };
  try {
    const r = await o.binary.cni(env, conf);
    if (r.exitCode === 0) return undefined;
    return `${r.stderr.trim()} ${r.stdout.trim()}`.trim() || `exit code ${r.exitCode}`;
  } catch (err) {
    return (err as Error).message;
  }
}
