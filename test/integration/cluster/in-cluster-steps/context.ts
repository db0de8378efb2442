// What the in-cluster suite's steps share (../in-cluster.test.ts sets the cluster up once, and
// runs them in order): the cluster's handles, kubectl, and the names of the test node.
import type { ControlPlane } from '../../../harness/k8s/control-plane.js';
import type { KubeNode } from '../../../harness/k8s/node.js';
import { join } from 'node:path';
import { smcrDeployment } from '../../../helpers/deployments.js';

export const NODE = 'ecs-erdma-2';
/** The host tree the node's kubelet, containerd and our daemons see (test/harness/k8s/host-tree.ts). */
export const HOST = '/tmp/erdma-smcr-in-cluster';
export const APP = 'erdma-smcr.test/app:1';
export const CONFLIST = join(HOST, 'etc/cni/net.d/10-k8s.conflist');

export type Obj = {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [k: string]: any;
};

/** The cluster as the steps use it, set up by the suite's beforeAll. */
export interface InCluster {
  readonly dir: string;
  readonly cp: ControlPlane;
  readonly node: KubeNode;
  kubectl(...args: string[]): Promise<string>;
  getJson(...args: string[]): Promise<Obj & { items: Obj[] }>;
  until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs?: number): Promise<T>;
  /** `kubectl rollout status`, polled. */
  rolledOut(kind: 'deployment' | 'daemonset', name: string): Promise<true>;
}

export /**
 * The oom_score_adj the kubelet asked for, from `ctr containers info` of a container the CRI
 * plugin made: its metadata extension holds the CRI ContainerConfig as the kubelet sent it.
 */
function criOomScoreAdj(info: string): number | undefined {
  const ext = (JSON.parse(info) as { Extensions?: Record<string, { value?: string }> })
    .Extensions?.['io.cri-containerd.container.metadata'];
  if (!ext?.value)
    throw new Error(`no CRI metadata in the container's info: ${info.slice(0, 300)}`);
  const metadata = JSON.parse(Buffer.from(ext.value, 'base64').toString('utf8')) as {
    Metadata?: { Config?: { linux?: { resources?: { oom_score_adj?: number } } } };
  };
  return metadata.Metadata?.Config?.linux?.resources?.oom_score_adj;
}

/** An annotated two-replica Deployment of the test image in `apps`. */
export const appsDeployment = (name: string): object =>
  smcrDeployment(name, 'apps', {
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'app', image: APP, imagePullPolicy: 'Never' }],
  });

/** The agent DaemonSet's pods, as `pod/NAME` (what kubectl exec takes). */
export async function agentPodNames(kubectl: InCluster['kubectl']): Promise<string[]> {
  const out = await kubectl(
    'get',
    'pods',
    '-n',
    'erdma-smcr',
    '-l',
    'app.kubernetes.io/component=agent',
    '-o',
    'name',
  );
  return out.trim().split('\n');
}
