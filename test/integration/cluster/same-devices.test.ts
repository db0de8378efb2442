// One device model under both kubelet protocols (#94 item 2), on one real node (kubelet,
// scheduler and API server 1.37, containerd 2, the fixture's two eRDMA devices with ports up and
// a third in compat mode with its port down): the same workloads first through our DRA driver
// alone, then through our device plugin alone, and the containers get the same devices and are
// told the same. `aliyun/erdma: N` is N devices, each shared with other pods (docs/agent.md):
// DRA allocates it so, and the device plugin's preferred allocation asks the kubelet for so.
//   - a ResourceClaim for two devices (DRA only: the device plugin has no claims);
//   - a pod asking `aliyun/erdma: 2`;
//   - a Deployment of four annotated replicas (the webhook asks `aliyun/erdma: 1` for each).
// Each container's `ERDMA_DEVICES`, `ERDMA_PNETIDS` and /dev/infiniband are read with exec.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerdAvailable } from '../../harness/containerd.js';
import { ensureBinaries, type ControlPlane } from '../../harness/k8s/control-plane.js';
import { APP, startSingleNode, type SingleNode } from '../../harness/k8s/single-node.js';
import { until as poll } from '../../helpers/wait.js';
import { cniPlugins, requires } from '../../helpers/requires.js';

const why = requires('the same-devices suite', ensureBinaries, containerdAvailable, cniPlugins);

const NODE = 'ecs-erdma-same';
const DRIVER = 'erdma.smcr.erdma.io';

type Obj = {
  metadata: { name: string; labels?: Record<string, string> };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [k: string]: any;
};

/** What one container was given. */
interface Given {
  devices: string;
  pnetIds: string;
  nodes: string;
}

describe.skipIf(why !== '')(
  'the same workloads through DRA and through the device plugin get the same devices and are told the same',
  () => {
    let cluster: SingleNode | undefined;
    let cp: ControlPlane;
    const kubectl = async (...args: string[]): Promise<string> => {
      const r = await cp.kubectl(args);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const getJson = async (...args: string[]): Promise<Obj & { items: Obj[] }> =>
      JSON.parse(await kubectl('get', '-o', 'json', ...args));
    const apply = async (obj: object): Promise<void> => {
      const r = await cp.kubectl(['apply', '-f', '-'], JSON.stringify(obj));
      if (r.status !== 0) throw new Error(`apply: ${r.stderr}`);
    };
    const until = <T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 120_000) =>
      poll(what, f, {
        timeoutMs,
        intervalMs: 500,
        retryErrors: true,
        details: () =>
          `--- kubelet ---\n${cluster?.node.logs('kubelet').slice(-3000)}\n--- dra ---\n${cluster?.node.logs('dra').slice(-1500)}`,
      });
    const given = async (pod: string): Promise<Given> => {
      const out = await kubectl(
        'exec',
        '-n',
        'apps',
        pod,
        '--',
        'sh',
        '-c',
        'echo "$ERDMA_DEVICES"; echo "$ERDMA_PNETIDS"; ls /dev/infiniband | sort | tr "\\n" " "',
      );
      const [devices = '', pnetIds = '', nodes = ''] = out.split('\n');
      return { devices, pnetIds, nodes: nodes.trim() };
    };
    const container = (extra: object = {}): object => ({
      name: 'app',
      image: APP,
      imagePullPolicy: 'Never',
      ...extra,
    });
    const runningPods = (selector: string, n: number): Promise<Obj[]> =>
      until(`${n} pods ${selector} Running`, async () => {
        const pods = (await getJson('pods', '-n', 'apps', '-l', selector)).items;
        return pods.length === n && pods.every((p) => p.status.phase === 'Running')
          ? pods
          : undefined;
      });

    /** aliyun/erdma: 2 and the Deployment of four annotated replicas; what each container got. */
    const workloads = async (tag: string): Promise<{ two: Given; four: Given[] }> => {
      await apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `two-${tag}`, namespace: 'apps', labels: { w: `two-${tag}` } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [container({ resources: { limits: { 'aliyun/erdma': '2' } } })],
        },
      });
      await apply({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: `four-${tag}`, namespace: 'apps' },
        spec: {
          replicas: 4,
          selector: { matchLabels: { w: `four-${tag}` } },
          template: {
            metadata: {
              labels: { w: `four-${tag}` },
              annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
            },
            spec: { terminationGracePeriodSeconds: 1, containers: [container()] },
          },
        },
      });
      await runningPods(`w=two-${tag}`, 1);
      const four = await runningPods(`w=four-${tag}`, 4);
      const out = {
        two: await given(`two-${tag}`),
        four: await Promise.all(four.map((p) => given(p.metadata.name))),
      };
      await kubectl('delete', 'deployment', '-n', 'apps', `four-${tag}`, '--wait=true');
      await kubectl('delete', 'pod', '-n', 'apps', `two-${tag}`, '--wait=true');
      await until(`the ${tag} pods gone`, async () =>
        (await getJson('pods', '-n', 'apps')).items.length === 0 ? true : undefined,
      );
      return out;
    };

    let viaDra: { two: Given; four: Given[] };

    beforeAll(async () => {
      cluster = await startSingleNode({
        node: NODE,
        nodeIp: '10.200.0.11',
        devicePlugin: false,
        dra: true,
      });
      cp = cluster.cp;
      await until('our ResourceSlice', async () =>
        (await getJson('resourceslices')).items.some((s) => s.spec.driver === DRIVER)
          ? true
          : undefined,
      );
    }, 300_000);
    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    it('through DRA: a claim for two devices tells its container of both', async () => {
      await apply({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceClaimTemplate',
        metadata: { name: 'two-devices', namespace: 'apps' },
        spec: {
          spec: {
            devices: {
              requests: [{ name: 'erdma', exactly: { deviceClassName: DRIVER, count: 2 } }],
            },
          },
        },
      });
      await apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'claim-two', namespace: 'apps', labels: { w: 'claim-two' } },
        spec: {
          terminationGracePeriodSeconds: 1,
          resourceClaims: [{ name: 'erdma', resourceClaimTemplateName: 'two-devices' }],
          containers: [container({ resources: { claims: [{ name: 'erdma' }] } })],
        },
      });
      await runningPods('w=claim-two', 1);
      const claim = (await getJson('resourceclaims', '-n', 'apps')).items.find((c) =>
        c.metadata.name.startsWith('claim-two-erdma'),
      )!;
      const allocated = (claim.status.allocation.devices.results as { device: string }[])
        .map((r) => r.device)
        .sort();
      const g = await given('claim-two');
      console.log(
        `claim for two: allocated ${allocated.join(',')}; the container: ${JSON.stringify(g)}`,
      );
      expect(allocated).toEqual(['erdma-0', 'erdma-2']);
      expect(g.devices.split(',').sort()).toEqual(['erdma_0', 'erdma_2']);
      expect(g.pnetIds.split(',')).toHaveLength(2);
      // The fixture's erdma_2 has no verbs node: rdma_cm and erdma_0's.
      expect(g.nodes).toBe('rdma_cm uverbs0');
      await kubectl('delete', 'pod', '-n', 'apps', 'claim-two', '--wait=true');
    }, 180_000);

    it('through DRA: aliyun/erdma: 2 and four annotated replicas', async () => {
      viaDra = await workloads('dra');
      console.log(`through DRA: ${JSON.stringify(viaDra)}`);
      // Two devices, not two shares of one; every device given is named, with its PNETID.
      expect(viaDra.two.devices.split(',').sort()).toEqual(['erdma_0', 'erdma_2']);
      expect(viaDra.two.pnetIds.split(',')).toHaveLength(2);
      for (const g of viaDra.four) expect(g.devices.split(',')).toHaveLength(1);
    }, 300_000);

    it('through the device plugin: the same workloads get the same devices and env', async () => {
      await cluster!.restartAgent(true);
      await until('aliyun/erdma allocatable from the device plugin', async () =>
        Number((await getJson('node', NODE)).status.allocatable?.['aliyun/erdma'] ?? 0) > 0
          ? true
          : undefined,
      );
      await cluster!.stopDra();
      const viaPlugin = await workloads('dp');
      console.log(`through the device plugin: ${JSON.stringify(viaPlugin)}`);
      const sorted = (gs: Given[]): string[] => gs.map((g) => JSON.stringify(g)).sort();
      expect(viaPlugin.two).toEqual(viaDra.two);
      expect(sorted(viaPlugin.four)).toEqual(sorted(viaDra.four));
    }, 300_000);
  },
);
