// What the annotation costs a pod's start (#84 item 5), on the real kubelet 1.37 and containerd 2 of
// a single-node cluster (test/harness/k8s/single-node.ts) with our webhook, device plugin and CNI
// plugin in the path: N annotated and N plain pods created alternately at a fixed rate in the same
// run, each timed from the start of its create call to the moment a watch (`kubectl get pods -w`,
// in the cluster's netns) first reports it Ready. The plain pods are the baseline: they cross the
// same API server, webhook call (the base configuration sends every pod; it skips them), scheduler,
// kubelet and CNI chain, but get no device and no SMC-R settings. aliyun/erdma is served shared
// (many slots per device) so that devices do not limit how many annotated pods run at once.
// A third kind (#86 item 8) gets its device through our DRA driver instead, in the same run on the
// same node: annotated, with smcr.erdma.io/device-claim and a ResourceClaimTemplate of our
// DeviceClass, so the scheduler allocates from our ResourceSlice and the kubelet calls our DRA
// plugin, which writes a CDI spec containerd reads; its ratio is against the device plugin's pods.
// ERDMA_SMCR_BENCH_PODS: pods of each kind (default 20: 60 pods on the node, as many as two kinds of 30 had); ERDMA_SMCR_BENCH_POD_INTERVAL_MS: time
// between two creations (default 800: at 400 this 2-core machine saturated, every kind 10 s p50).
import { spawn } from 'node:child_process';
import type { BenchRow } from './report.js';
import { median } from './report.js';
import { percentile } from './paced.js';
import { binPath, binariesPresent } from '../test/harness/k8s/control-plane.js';
import { APP, startSingleNode } from '../test/harness/k8s/single-node.js';

const N = Number(process.env.ERDMA_SMCR_BENCH_PODS ?? 20);
const INTERVAL_MS = Number(process.env.ERDMA_SMCR_BENCH_POD_INTERVAL_MS ?? 800);
const TARGET_P99 = 1.1;

type Kind = 'plain' | 'smcr' | 'dra';

const TEMPLATE = {
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceClaimTemplate',
  metadata: { name: 'erdma', namespace: 'apps' },
  spec: {
    spec: {
      devices: {
        requests: [{ name: 'erdma', exactly: { deviceClassName: 'erdma.smcr.erdma.io' } }],
      },
    },
  },
};

const pod = (name: string, kind: Kind): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'apps',
      ...(kind === 'plain'
        ? {}
        : {
            annotations: {
              'network.alibabacloud.com/erdma-smcr': 'true',
              ...(kind === 'dra' ? { 'smcr.erdma.io/device-claim': 'erdma' } : {}),
            },
          }),
    },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      ...(kind === 'dra'
        ? { resourceClaims: [{ name: 'erdma', resourceClaimTemplateName: 'erdma' }] }
        : {}),
      containers: [
        {
          name: 'app',
          image: APP,
          imagePullPolicy: 'Never',
          ...(kind === 'dra' ? { resources: { claims: [{ name: 'erdma' }] } } : {}),
        },
      ],
    },
  });

export async function benchPodsStart(): Promise<BenchRow[]> {
  if (binariesPresent(['etcd', 'kube-apiserver', 'kubelet', 'kubectl']).length > 0)
    throw new Error('bench pods-start needs the harness: run test/harness/k8s/build.sh');
  const cluster = await startSingleNode({
    node: 'ecs-bench-1',
    nodeIp: '10.203.0.2',
    dra: true,
  });
  const { cp } = cluster;
  const made = await cp.kubectl(['apply', '-f', '-'], JSON.stringify(TEMPLATE));
  if (made.status !== 0) throw new Error(`the claim template: ${made.stderr}`);
  const ready = new Map<string, number>();
  const watch = spawn(
    'nsenter',
    [
      `--net=${cp.netns}`,
      binPath('kubectl'),
      '--kubeconfig',
      cp.kubeconfig,
      'get',
      'pods',
      '-n',
      'apps',
      '-w',
      '-o',
      'jsonpath={.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}',
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let buf = '';
  watch.stdout.on('data', (d: Buffer) => {
    const now = performance.now();
    buf += d.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines) {
      const [name, status] = l.trim().split(' ');
      if (name && status === 'True' && !ready.has(name)) ready.set(name, now);
    }
  });
  try {
    const started = new Map<string, number>();
    const creations: Promise<unknown>[] = [];
    const kinds: Kind[] = ['plain', 'smcr', 'dra'];
    for (let i = 0; i < N; i++) {
      // Each kind first in turn, so that none always follows another.
      for (const kind of [...kinds.slice(i % 3), ...kinds.slice(0, i % 3)]) {
        const name = `${kind}-${i}`;
        started.set(name, performance.now());
        creations.push(
          cp.kubectl(['create', '-f', '-'], pod(name, kind)).then((r) => {
            if (r.status !== 0) throw new Error(`create ${name}: ${r.stderr}`);
          }),
        );
        await new Promise((r) => setTimeout(r, INTERVAL_MS));
      }
    }
    await Promise.all(creations);
    const deadline = Date.now() + 180_000;
    while (ready.size < started.size) {
      if (Date.now() > deadline)
        throw new Error(`only ${ready.size} of ${started.size} pods became Ready in 3 minutes`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const times = (prefix: string): number[] =>
      [...started]
        .filter(([n]) => n.startsWith(prefix))
        .map(([n, t]) => ready.get(n)! - t)
        .sort((a, b) => a - b);
    const plain = times('plain-');
    const smcr = times('smcr-');
    const dra = times('dra-');
    const p99 = (xs: number[]): number => percentile(xs, 0.99);
    const ratio50 = median(smcr) / median(plain);
    const ratio99 = p99(smcr) / p99(plain);
    const at = `${N} of each kind, in turn, a pod every ${INTERVAL_MS / 1000} s`;
    return [
      {
        bench: 'pods-start',
        case: `plain pod, creation → Ready p50 / p99 (${at})`,
        value: median(plain),
        unit: `ms p50 / ${p99(plain).toFixed(0)} ms p99`,
      },
      {
        bench: 'pods-start',
        case: 'annotated pod: webhook, device plugin, our CNI plugin in the path, p50 / p99',
        value: median(smcr),
        unit: `ms p50 / ${p99(smcr).toFixed(0)} ms p99`,
        ratio: ratio99,
        target: `p99 ≤ ${TARGET_P99}× plain: ${ratio99 <= TARGET_P99 ? 'met' : 'not met'}`,
        extra: `p50 ${ratio50.toFixed(2)}× plain`,
      },
      {
        bench: 'pods-start',
        case: "annotated pod with its device through our DRA driver (claim template, CDI), p50 / p99 (× the device plugin's)",
        value: median(dra),
        unit: `ms p50 / ${p99(dra).toFixed(0)} ms p99`,
        ratio: median(dra) / median(smcr),
        extra: `p99 ${(p99(dra) / p99(smcr)).toFixed(2)}× the device plugin's; p50 ${(median(dra) / median(plain)).toFixed(2)}× plain`,
      },
    ];
  } finally {
    watch.kill();
    await cluster.stop();
  }
}
