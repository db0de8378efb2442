// A production-size cluster for the webhook's live view: Node objects shaped like ACK's (about
// 10 KB each: ~22 labels, 40 images in status.images, Alibaba Cloud Linux 3 nodeInfo, five
// conditions), created in bulk through the API server, and the status updates their kubelets
// would send (each node once per nodeStatusReportFrequency, 5 min by default, before any change).
import { request, Agent } from 'node:https';
import type { ControlPlane } from './control-plane.js';

export const ACK_KERNEL = '5.10.134-17.3.al8.x86_64';
export const ACK_OS_IMAGE = 'Alibaba Cloud Linux 3.2104 U10 (OpenAnolis Edition)';
/** Every this-many-th node is an eRDMA node the agent found capable. */
const CAPABLE_EVERY = 4;

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');

function conditions(now: string): unknown[] {
  const c = (type: string, status: string, reason: string, message: string): unknown => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: '2026-11-01T00:00:00Z',
  });
  return [
    c(
      'MemoryPressure',
      'False',
      'KubeletHasSufficientMemory',
      'kubelet has sufficient memory available',
    ),
    c('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
    c('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    c('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
    c('NetworkUnavailable', 'False', 'RouteCreated', 'RouteController created a route'),
  ];
}

const ackIp = (i: number): string => `192.168.${(i >> 8) & 255}.${i & 255}`;

/** The name of ackNode(i), without building the node (the churn names one per update). */
export const ackNodeName = (i: number): string => `cn-hangzhou.${ackIp(i)}-${i}`;

/** An ACK-shaped Node, about 10 KB of JSON. */
export function ackNode(i: number): Record<string, unknown> {
  const ip = ackIp(i);
  const name = ackNodeName(i);
  const zone = `cn-hangzhou-${'hijk'[i % 4]}`;
  const type = ['ecs.g8i.4xlarge', 'ecs.g8i.8xlarge', 'ecs.ebmg8i.48xlarge'][i % 3]!;
  const instance = `i-bp1${hex(i * 7919, 17)}`;
  const capable = i % CAPABLE_EVERY === 0;
  const labels: Record<string, string> = {
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/instance-type': type,
    'beta.kubernetes.io/os': 'linux',
    'failure-domain.beta.kubernetes.io/region': 'cn-hangzhou',
    'failure-domain.beta.kubernetes.io/zone': zone,
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': name,
    'kubernetes.io/os': 'linux',
    'node.kubernetes.io/instance-type': type,
    'topology.kubernetes.io/region': 'cn-hangzhou',
    'topology.kubernetes.io/zone': zone,
    'alibabacloud.com/nodepool-id': `np${hex(i % 7, 30)}`,
    'alibabacloud.com/instance-id': instance,
    'ack.aliyun.com': 'c0123456789abcdef0123456789abcdef',
    'node.csi.alibabacloud.com/disktype.cloud_essd': 'available',
    'node.csi.alibabacloud.com/disktype.cloud_auto': 'available',
    'node.kubernetes.io/exclude-from-external-load-balancers': 'false',
    'alibabacloud.com/ecs-instance-family': type.split('.').slice(0, 2).join('.'),
    'smcr.erdma.io/erdma-node': 'true',
    'smcr.erdma.io/capable': capable ? 'true' : 'false',
    'smcr.erdma.io/driver-mode': 'default',
    ...(capable ? {} : { 'smcr.erdma.io/reason': 'no-erdma-device' }),
  };
  const images = Array.from({ length: 40 }, (_, k) => ({
    names: [
      `registry-vpc.cn-hangzhou.aliyuncs.com/acs/c${k}@sha256:${hex(k * 104729 + i, 64)}`,
      `registry-vpc.cn-hangzhou.aliyuncs.com/acs/c${k}:v1.${k}.${i % 10}-aliyun`,
    ],
    sizeBytes: 10_000_000 + k * 1_234_567,
  }));
  const resources = {
    cpu: '16',
    memory: '65218320Ki',
    pods: '64',
    'ephemeral-storage': '123722704Ki',
    'aliyun/erdma': capable ? '64' : '0',
  };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels,
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
        'csi.volume.kubernetes.io/nodeid': JSON.stringify({
          'diskplugin.csi.alibabacloud.com': instance,
          'nasplugin.csi.alibabacloud.com': instance,
        }),
      },
    },
    spec: { podCIDR: `172.20.${i & 255}.0/26`, providerID: `cn-hangzhou.${instance}` },
    status: {
      capacity: resources,
      allocatable: resources,
      conditions: conditions('2026-11-25T00:00:00Z'),
      addresses: [
        { type: 'InternalIP', address: ip },
        { type: 'Hostname', address: name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: hex(i, 32),
        systemUUID: `${hex(i, 8)}-0000-4000-8000-${hex(i, 12)}`,
        bootID: `${hex(i * 31, 8)}-1111-4000-8000-${hex(i, 12)}`,
        kernelVersion: ACK_KERNEL,
        osImage: ACK_OS_IMAGE,
        containerRuntimeVersion: 'containerd://1.6.28',
        kubeletVersion: 'v1.30.1-aliyun.1',
        kubeProxyVersion: 'v1.30.1-aliyun.1',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
      images,
    },
  };
}

/** The API server of a control plane, called with its admin token over a few kept-alive connections. */
export class Api {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 16 });
  constructor(private readonly cp: ControlPlane) {}

  call(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<{ status: number; text: string }> {
    const url = new URL(path, this.cp.url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          agent: this.agent,
          ca: this.cp.caPem,
          headers: {
            authorization: `Bearer ${this.cp.token}`,
            accept: 'application/json',
            ...(payload
              ? { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Creates nodes `from` ..< `to` (ackNode), 16 requests at a time; throws on the first refusal. */
export async function createNodes(api: Api, from: number, to: number): Promise<void> {
  let next = from;
  const worker = async (): Promise<void> => {
    while (next < to) {
      const i = next++;
      const r = await api.call('POST', '/api/v1/nodes', ackNode(i));
      if (r.status !== 201 && r.status !== 409)
        throw new Error(`creating node ${i}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

export interface Churn {
  /** Status updates sent so far. */
  readonly sent: () => number;
  stop(): Promise<void>;
}

/**
 * Kubelet status updates at `perSecond` (new heartbeat times in every condition, as a kubelet
 * sends them), over nodes 0 ..< `count` in turn; and every `labelEvery`-th update flips node's
 * capable label instead, as an agent would. Kubelets send theirs independently: one update in
 * flight per 10/s asked, so that an API server that takes 20-30 ms an update at 20,000 nodes still
 * gets the rate (one at a time reached 43.5 of 67/s, #72).
 */
export function churn(api: Api, count: number, perSecond: number, labelEvery = 0): Churn {
  let sent = 0;
  let stopped = false;
  let inFlight = Promise.resolve();
  const started = Date.now();
  const tick = async (): Promise<void> => {
    while (!stopped) {
      const due = Math.floor(((Date.now() - started) / 1000) * perSecond);
      if (sent >= due) {
        await new Promise((r) => setTimeout(r, Math.max(1, 1000 / perSecond / 2)));
        continue;
      }
      const i = sent % Math.max(1, count);
      sent += 1;
      const name = ackNodeName(i);
      const flip = labelEvery > 0 && sent % labelEvery === 0;
      const r = flip
        ? await api.call(
            'PATCH',
            `/api/v1/nodes/${name}`,
            {
              metadata: {
                labels: {
                  'smcr.erdma.io/capable': sent % (2 * labelEvery) === 0 ? 'true' : 'false',
                },
              },
            },
            'application/merge-patch+json',
          )
        : await api.call(
            'PATCH',
            `/api/v1/nodes/${name}/status`,
            { status: { conditions: conditions(new Date().toISOString()) } },
            'application/merge-patch+json',
          );
      if (r.status !== 200)
        throw new Error(`updating node ${name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
    }
  };
  // A refused update ends the churn; stop() reports it.
  let failure: unknown;
  const senders = Math.max(1, Math.ceil(perSecond / 10));
  inFlight =
    count > 0 && perSecond > 0
      ? Promise.all(Array.from({ length: senders }, tick))
          .then(() => undefined)
          .catch((err: unknown) => {
            failure = err;
            stopped = true;
          })
      : Promise.resolve();
  return {
    sent: () => sent,
    async stop() {
      stopped = true;
      await inFlight;
      if (failure) throw failure;
    },
  };
}
