// A busy node's pods, for the agent's pods' watch (#43): the agent lists and watches every pod of
// its node, whatever the pod asks for, and the in-cluster suite read its working set at 37 MB
// after a burst of pods on the node, twice its 19 MB at rest.
import { spawnSync } from 'node:child_process';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../src/cluster/client.js';
import { SETTINGS_ANNOTATION, SMCR_ANNOTATION } from '../src/constants.js';

const env = (names: readonly string[]): { name: string; value: string }[] =>
  names.map((name, i) => ({ name, value: `value-${i}-${name.toLowerCase()}` }));

/**
 * The `i`th pod of a busy node as its ReplicaSet creates it: an app container with probes, ports,
 * resources and environment, and a log-shipping sidecar. With `smcr` it asks for SMC-R and carries
 * the settings the webhook resolved. (The `pods` bench's pods do not: the agent would find no
 * record of our CNI plugin for them, as none ran, and tell each in an Event.)
 */
export function nodePod(node: string, i: number, smcr = false): V1Pod {
  const app = `svc-${i % 12}`;
  const hash = (0x5bc65b6b6d + (i % 12)).toString(16);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${app}-${hash}-${String(i).padStart(5, '0')}`,
      labels: { app, 'pod-template-hash': hash, tier: 'backend', version: 'v1.4.2' },
      annotations: smcr
        ? { [SMCR_ANNOTATION]: 'true', [SETTINGS_ANNOTATION]: '{"v":1,"wmem":1048576}' }
        : { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090' },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `${app}-${hash}`,
          uid: `00000000-0000-4000-8000-${(i % 12).toString().padStart(12, '0')}`,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'app',
          image: `registry.example.invalid/team/${app}:v1.4.2`,
          args: ['--listen=:8080', '--metrics=:9090', '--log-format=json'],
          env: env(['DB_HOST', 'DB_PORT', 'CACHE_URL', 'LOG_LEVEL', 'REGION', 'FEATURE_FLAGS']),
          ports: [
            { name: 'http', containerPort: 8080, protocol: 'TCP' },
            { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
          ],
          resources: {
            requests: { cpu: '250m', memory: '256Mi' },
            limits: { cpu: '1', memory: '512Mi' },
          },
          readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 5 },
          livenessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 10 },
          volumeMounts: [
            { name: 'config', mountPath: '/etc/app' },
            { name: 'logs', mountPath: '/var/log/app' },
          ],
        },
        {
          name: 'log-shipper',
          image: 'registry.example.invalid/platform/log-shipper:2.1.0',
          args: ['--path=/var/log/app/*.log'],
          resources: { requests: { cpu: '20m', memory: '32Mi' } },
          volumeMounts: [{ name: 'logs', mountPath: '/var/log/app', readOnly: true }],
        },
      ],
      volumes: [
        { name: 'config', configMap: { name: `${app}-config` } },
        { name: 'logs', emptyDir: {} },
      ],
    },
  };
}

/**
 * The status a kubelet writes for a pod once it runs (the `i`th of its node: its IP and container
 * IDs), as a watch sends it: times as RFC 3339 strings.
 */
export function runningStatus(pod: V1Pod, i: number): V1Pod['status'] {
  const t = new Date(Date.UTC(2026, 10, 28, 9, 0, i % 60)).toISOString() as unknown as Date;
  return {
    phase: 'Running',
    hostIP: '192.168.0.10',
    podIP: `10.244.${Math.floor(i / 250)}.${(i % 250) + 2}`,
    podIPs: [{ ip: `10.244.${Math.floor(i / 250)}.${(i % 250) + 2}` }],
    startTime: t,
    qosClass: 'Burstable',
    conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
      type,
      status: 'True',
      lastTransitionTime: t,
    })),
    containerStatuses: (pod.spec?.containers ?? []).map((c, k) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: `${c.image ?? ''}@sha256:${String(k + 1).repeat(64)}`,
      containerID: `containerd://${(i * 2 + k).toString(16).padStart(64, '0')}`,
      ready: true,
      restartCount: 0,
      started: true,
      state: { running: { startedAt: t } },
    })),
  };
}

/**
 * Creates pods `from`..`to`-1 of nodePod in `namespace` (asking for SMC-R with `smcr`), each then
 * given a running status through the status subresource, as its ReplicaSet and the node's kubelet
 * would: `concurrency` at a time.
 */
export async function createNodePods(
  client: KubeClient,
  node: string,
  from: number,
  to: number,
  { namespace = 'default', concurrency = 8, smcr = false } = {},
): Promise<void> {
  const base = `/api/v1/namespaces/${namespace}/pods`;
  let next = from;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < to; i = next++) {
      const made = await client.request<V1Pod>('POST', base, { body: nodePod(node, i, smcr) });
      await client.request('PUT', `${base}/${made.metadata?.name ?? ''}/status`, {
        body: { ...made, status: runningStatus(made, i) },
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Heap bytes held per pod of a list, kept whole and as the agent keeps it (keptPod). */
export interface HeldPerPod {
  readonly pods: number;
  readonly whole: number;
  readonly kept: number;
}

/**
 * What holding the pods of `listFile` (a PodList as the API server sent it) takes of a V8 heap,
 * per pod: parsed as the agent's watch parses it, then held whole or as the agent keeps it. In a
 * `node` of its own with --expose-gc, so that each figure is what a full collection leaves.
 */
export function heldPerPod(node: string, listFile: string): HeldPerPod {
  const r = spawnSync(node, ['--expose-gc', '--import', 'tsx', 'bench/held-pods.ts', listFile], {
    encoding: 'utf8',
  });
  if (r.status !== 0)
    throw new Error(`bench/held-pods.ts ${listFile} exited ${r.status}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout) as HeldPerPod;
}
