// A pod of this node as the agent keeps it (#43): the few fields its duties read, whatever the
// pod asks for, and whether it asks for SMC-R.
import type { V1ObjectMeta, V1Pod, V1PodSpec, V1PodStatus } from '@kubernetes/client-node';
import { OWN_PREFIX, SMCR_ANNOTATION } from '../constants.js';
import { smcrRequested } from '../policy/parse-bool.js';

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
  return smcrRequested(pod.metadata?.annotations)?.on === true && pod.spec?.hostNetwork !== true;
}

/**
 * The kubelet's condition for a pod whose sandbox is made and its network set up (KEP-3085:
 * PodReadyToStartContainers, beta and on since 1.29; PodHasNetwork in 1.25-1.26). It turns False
 * when the sandbox is gone (a crash, a node reboot) and True again, with a new transition time,
 * once the runtime has made it again, our plugin's ADD included.
 */
export const SANDBOX_CONDITIONS: readonly string[] = ['PodReadyToStartContainers', 'PodHasNetwork'];
