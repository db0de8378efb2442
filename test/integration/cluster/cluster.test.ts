// The whole path on a real single-node cluster: kube-apiserver, controller-manager, scheduler and
// kubelet 1.37 (built from the Go module proxy, unpatched), containerd 2 and Debian's runc, our webhook (secret
// mode, live view) registered with our manifests' objects, and our node agent (device plugin,
// labels, CNI chaining, Events) with its real ServiceAccount token. An annotated Deployment's pods
// are mutated, scheduled onto the labelled node, get an aliyun/erdma device from our plugin, and
// containerd runs our CNI plugin with the annotations. Everything runs in a network namespace and
// the node in a private mount namespace (test/harness/k8s/node.ts).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerdAvailable } from '../../harness/containerd.js';
import { ensureBinaries, type ControlPlane } from '../../harness/k8s/control-plane.js';
import type { KubeNode } from '../../harness/k8s/node.js';
import { APP, startSingleNode, type SingleNode } from '../../harness/k8s/single-node.js';
import { smcrDeployment } from '../../helpers/deployments.js';
import { until as poll } from '../../helpers/wait.js';
import { eventsWithReason } from '../../harness/k8s/events.js';
import { cniPlugins, requires } from '../../helpers/requires.js';

const why = requires('the cluster suite', ensureBinaries, containerdAvailable, cniPlugins);

const NODE = 'ecs-erdma-1';
const NODE_IP = '10.200.0.2';

type Obj = {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [k: string]: any;
};

describe.skipIf(why !== '')(
  'a real single-node cluster: webhook → scheduler → kubelet → device plugin → containerd → our CNI plugin',
  () => {
    let cp: ControlPlane;
    let node: KubeNode;
    let hostRoot: string;
    let cluster: SingleNode | undefined;

    const kubectl = async (...args: string[]): Promise<string> => {
      const r = await cp.kubectl(args);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const getJson = async (...args: string[]): Promise<Obj & { items: Obj[] }> =>
      JSON.parse(await kubectl('get', '-o', 'json', ...args));
    // The API settles slowly on this machine: errors count as "not yet", and a timeout shows the logs.
    const until = <T>(
      what: string,
      f: () => Promise<T | undefined>,
      timeoutMs = 60_000,
    ): Promise<T> =>
      poll(what, f, {
        timeoutMs,
        intervalMs: 300,
        retryErrors: true,
        details: () =>
          `--- kubelet ---\n${node?.logs('kubelet').slice(-3000)}\n--- agent ---\n${node?.logs('agent').slice(-2000)}`,
      });
    const capacity = async (): Promise<number> =>
      Number((await getJson('node', NODE)).status?.capacity?.['aliyun/erdma'] ?? 0);

    beforeAll(async () => {
      cluster = await startSingleNode({
        node: NODE,
        nodeIp: NODE_IP,
        // Two resources, as on a node with eRDMA and a Mellanox HCA (the fixture has both), and
        // an optional third this node has no device for (one DaemonSet for mixed nodes).
        resources: [
          { name: 'aliyun/erdma', selector: { vendors: ['0x1ded'] } },
          { name: 'rdma/hca', selector: { drivers: ['mlx5_core'] }, mode: 'shared', slots: 1000 },
          {
            name: 'example.com/bnxt',
            selector: { drivers: ['bnxt_re'] },
            mode: 'shared',
            optional: true,
          },
        ],
        nodeReady: (n) =>
          n.status.capacity?.['rdma/hca'] === '1k' && n.status.capacity['example.com/bnxt'] === '0',
      });
      ({ cp, node, hostRoot } = cluster);
    }, 240_000);

    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    const deployment = (name: string, replicas: number): string =>
      JSON.stringify(
        smcrDeployment(
          name,
          'apps',
          {
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'app', image: APP, imagePullPolicy: 'Never' }],
          },
          replicas,
        ),
      );
    const runningPods = async (app: string, n: number): Promise<Obj[]> =>
      until(
        `${n} running ${app} pods`,
        async () => {
          const pods = (await getJson('pods', '-n', 'apps', '-l', `app=${app}`)).items;
          return pods.length === n && pods.every((p) => p.status.phase === 'Running')
            ? pods
            : undefined;
        },
        120_000,
      ).catch(async (err: Error) => {
        throw new Error(
          `${err.message}\n--- pods ---\n${(await cp.kubectl(['describe', 'pods', '-n', 'apps'])).stdout.slice(-4000)}`,
        );
      });

    it('runs an annotated Deployment end to end: mutated, scheduled, device allocated, CNI applied, Event posted', async () => {
      const r = await cp.kubectl(['apply', '-f', '-'], deployment('web', 2));
      expect(r.status, r.stderr).toBe(0);
      const pods = await runningPods('web', 2);
      for (const pod of pods) {
        const c = pod.spec.containers[0];
        expect(c.resources.limits['aliyun/erdma']).toBe('1');
        expect(pod.spec.nodeName).toBe(NODE);
        expect(
          pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
            .nodeSelectorTerms[0].matchExpressions,
        ).toContainEqual({ key: 'smcr.erdma.io/capable', operator: 'In', values: ['true'] });
        expect(
          JSON.parse(pod.metadata.annotations?.['smcr.erdma.io/settings'] ?? '{}').sysctls[
            'net.smc.tcp2smc'
          ],
        ).toBe('1');
        const inPod = async (...cmd: string[]): Promise<string> =>
          (await kubectl('exec', '-n', 'apps', pod.metadata.name, '--', ...cmd)).trim();
        // Our plugin ran in the pod's netns (IPv6 off); the device plugin's device and env are in the container.
        expect(await inPod('cat', '/proc/sys/net/ipv6/conf/all/disable_ipv6')).toBe('1');
        expect((await inPod('ls', '/dev/infiniband')).split(/\s+/)).toEqual(
          expect.arrayContaining(['rdma_cm', 'uverbs0']),
        );
        expect(await inPod('sh', '-c', 'echo $ERDMA_DEVICES')).toMatch(/erdma_/);
        // This kernel has no SMC: the agent tells the user why the pod stays on TCP.
        const events = await until('our Event', () =>
          eventsWithReason(getJson, pod, 'SMCRUnavailable'),
        );
        expect(events.find((e) => e.reason === 'SMCRUnavailable')?.message).toMatch(
          /the pod uses TCP: no SMC mechanism was active on its node when its network was set up \(no net\.smc\.tcp2smc/,
        );
      }
      expect(
        readdirSync(join(hostRoot, 'var/lib/cni/erdma-smcr')).filter((f) =>
          f.endsWith('_eth0.json'),
        ),
      ).toHaveLength(2);
    }, 240_000);

    it('serves rdma/hca beside aliyun/erdma: every HCA to an rdma/hca pod, one eRDMA device with its NUMA node to a GPU-style pod', async () => {
      const rdmaPod = (
        name: string,
        resources: Record<string, string>,
        hostNetwork: boolean,
      ): string =>
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name, namespace: 'apps' },
          spec: {
            hostNetwork,
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'app',
                image: APP,
                imagePullPolicy: 'Never',
                resources: { limits: resources },
                securityContext: { capabilities: { add: ['IPC_LOCK'] } },
              },
            ],
          },
        });
      for (const body of [
        rdmaPod('hca', { 'rdma/hca': '1' }, false),
        rdmaPod('nccl', { 'aliyun/erdma': '1' }, true),
      ]) {
        const r = await cp.kubectl(['create', '-f', '-'], body);
        expect(r.status, r.stderr).toBe(0);
      }
      for (const name of ['hca', 'nccl']) {
        await until(
          `${name} running`,
          async () =>
            (await getJson('pod', '-n', 'apps', name)).status.phase === 'Running'
              ? true
              : undefined,
          120_000,
        );
      }
      const inPod = async (pod: string, ...cmd: string[]): Promise<string> =>
        (await kubectl('exec', '-n', 'apps', pod, '--', ...cmd)).trim();
      // rdma/hca: the node's one HCA (mlx5_0 is uverbs2 in the fixture) and rdma_cm, nothing of eRDMA.
      expect((await inPod('hca', 'ls', '/dev/infiniband')).split(/\s+/).sort()).toEqual([
        'rdma_cm',
        'uverbs2',
      ]);
      expect(await inPod('hca', 'sh', '-c', 'echo $ERDMA_DEVICES')).toBe('mlx5_0');
      // The GPU-style pod (hostNetwork, no SMC-R): one eRDMA device; the kubelet recorded its NUMA node.
      const dev = await inPod('nccl', 'sh', '-c', 'echo $ERDMA_DEVICES');
      expect(['erdma_0', 'erdma_2', 'rocep0s6']).toContain(dev);
      const checkpoint = JSON.parse(
        node.exec('cat', ['/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint']),
      ) as {
        Data: {
          PodDeviceEntries: {
            PodUID: string;
            ResourceName: string;
            DeviceIDs: Record<string, string[]>;
          }[];
        };
      };
      const ncclUid = (await getJson('pod', '-n', 'apps', 'nccl')).metadata.uid as string;
      const entry = checkpoint.Data.PodDeviceEntries.find(
        (e) => e.PodUID === ncclUid && e.ResourceName === 'aliyun/erdma',
      )!;
      const [numa, ids] = Object.entries(entry.DeviceIDs)[0]!;
      expect(ids).toHaveLength(1);
      expect(ids[0]!.replace(/-\d+$/, '')).toBe(dev);
      // The fixture: erdma_0 on NUMA 0, rocep0s6 on 1, erdma_2 unknown (-1).
      expect(numa).toBe(
        ({ erdma_0: '0', rocep0s6: '1', erdma_2: '-1' } as Record<string, string>)[dev],
      );
      expect(
        (await cp.kubectl(['delete', 'pod', '-n', 'apps', 'hca', 'nccl', '--wait=true'])).status,
      ).toBe(0);
    }, 240_000);

    it('runs an annotated pod with a native sidecar the device is named for; a CPU resize is neither refused nor undone, the device stays', async () => {
      const cpu = (n: string): object => ({ requests: { cpu: n }, limits: { cpu: n } });
      const made = await cp.kubectl(
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: 'sidecar',
            namespace: 'apps',
            annotations: {
              'network.alibabacloud.com/erdma-smcr': 'true',
              'smcr.erdma.io/container': 'proxy',
            },
          },
          spec: {
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            initContainers: [
              { name: 'proxy', image: APP, imagePullPolicy: 'Never', restartPolicy: 'Always' },
            ],
            containers: [
              { name: 'app', image: APP, imagePullPolicy: 'Never', resources: cpu('100m') },
            ],
          },
        }),
      );
      expect(made.status, made.stderr).toBe(0);
      const pod = await until(
        'the sidecar pod Running',
        async () => {
          const p = await getJson('pod', '-n', 'apps', 'sidecar');
          return p.status.phase === 'Running' ? p : undefined;
        },
        120_000,
      );
      expect(pod.spec.initContainers[0].resources.limits['aliyun/erdma']).toBe('1');
      expect(pod.spec.containers[0].resources.limits['aliyun/erdma']).toBeUndefined();
      const inside = async (container: string, ...cmd: string[]): Promise<string> =>
        (await kubectl('exec', '-n', 'apps', 'sidecar', '-c', container, '--', ...cmd)).trim();
      // The settings applied in the pod's netns (shared by both), the device only in the sidecar.
      expect(await inside('app', 'cat', '/proc/sys/net/ipv6/conf/all/disable_ipv6')).toBe('1');
      expect((await inside('proxy', 'ls', '/dev/infiniband')).split(/\s+/)).toEqual(
        expect.arrayContaining(['rdma_cm', 'uverbs0']),
      );
      expect(
        (
          await cp.kubectl([
            'exec',
            '-n',
            'apps',
            'sidecar',
            '-c',
            'app',
            '--',
            'ls',
            '/dev/infiniband',
          ])
        ).status,
      ).not.toBe(0);

      // In-place resize (GA in 1.35): our webhook sees pods/resize not at all, so nothing undoes it.
      const resized = await cp.kubectl([
        'patch',
        'pod',
        '-n',
        'apps',
        'sidecar',
        '--subresource',
        'resize',
        '-p',
        JSON.stringify({ spec: { containers: [{ name: 'app', resources: cpu('200m') }] } }),
      ]);
      expect(resized.status, resized.stderr).toBe(0);
      const after = await until(
        'the kubelet applied the resize',
        async () => {
          const p = await getJson('pod', '-n', 'apps', 'sidecar');
          const st = p.status.containerStatuses?.find((c: { name: string }) => c.name === 'app');
          return st?.resources?.limits?.cpu === '200m' ? p : undefined;
        },
        60_000,
      );
      expect(after.spec.containers[0].resources.limits.cpu).toBe('200m');
      expect(after.spec.initContainers[0].resources.limits['aliyun/erdma']).toBe('1');
      expect(after.metadata.uid).toBe(pod.metadata.uid);
      expect((await inside('proxy', 'ls', '/dev/infiniband')).split(/\s+/)).toContain('uverbs0');
      console.log(
        `resize: app cpu ${pod.spec.containers[0].resources.limits.cpu} -> ${after.status.containerStatuses.find((c: { name: string }) => c.name === 'app').resources.limits.cpu}, restarts ${after.status.containerStatuses.find((c: { name: string }) => c.name === 'app').restartCount}`,
      );
      expect(
        (await cp.kubectl(['delete', 'pod', '-n', 'apps', 'sidecar', '--wait=true'])).status,
      ).toBe(0);
    }, 240_000);

    it('refuses a pod the policy denies, at dry-run and at create, with our message', async () => {
      const pod = JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'hostnet',
          namespace: 'apps',
          annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
        },
        spec: {
          hostNetwork: true,
          automountServiceAccountToken: false,
          containers: [{ name: 'app', image: APP, imagePullPolicy: 'Never' }],
        },
      });
      for (const args of [
        ['apply', '--dry-run=server', '-f', '-'],
        ['create', '-f', '-'],
      ]) {
        const r = await cp.kubectl(args, pod);
        expect(r.status).not.toBe(0);
        expect(r.stderr).toMatch(
          /denied the request: \[host-network\] spec\.hostNetwork: SMC-R cannot be enabled for a hostNetwork pod/,
        );
      }
    });

    it('survives a kubelet restart: the device plugin registers again, capacity returns, running pods are untouched', async () => {
      const before = (await getJson('pods', '-n', 'apps', '-l', 'app=web')).items.map((p) => [
        p.metadata.uid,
        p.status.containerStatuses[0].restartCount,
      ]);
      const registrations = (): number =>
        node.logs('agent').split('registered with the kubelet').length - 1;
      const regsBefore = registrations();
      await node.stopKubelet();
      node.startKubelet();
      // All three resources register again.
      await until(
        'all three plugins registered again and capacity is back',
        async () => {
          const hcaBack = (await getJson('node', NODE)).status.capacity?.['rdma/hca'] === '1k';
          return registrations() >= regsBefore + 3 && (await capacity()) > 0 && hcaBack
            ? true
            : undefined;
        },
        90_000,
      );
      const after = (await getJson('pods', '-n', 'apps', '-l', 'app=web')).items.map((p) => [
        p.metadata.uid,
        p.status.containerStatuses[0].restartCount,
      ]);
      expect(after).toEqual(before);
      // New pods still get devices after the restart.
      expect(
        (await cp.kubectl(['scale', '-n', 'apps', 'deployment/web', '--replicas=3'])).status,
      ).toBe(0);
      await runningPods('web', 3);
    }, 180_000);

    it('deleting the pods runs our DEL (repeated DELs are harmless) and leaves no state behind', async () => {
      expect(
        (await cp.kubectl(['delete', '-n', 'apps', 'deployment/web', '--wait=true'])).status,
      ).toBe(0);
      await until(
        'pods gone',
        async () => ((await getJson('pods', '-n', 'apps')).items.length === 0 ? true : undefined),
        120_000,
      );
      await until('no CNI state left', async () =>
        readdirSync(join(hostRoot, 'var/lib/cni/erdma-smcr')).filter((f) => f.endsWith('.json'))
          .length === 0
          ? true
          : undefined,
      );
    }, 180_000);
  },
);
