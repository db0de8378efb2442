// eRDMA devices through Dynamic Resource Allocation (#86), on a real single-node cluster:
// kube-apiserver, controller-manager (its resourceclaim controller) and kube-scheduler 1.37 with
// their default feature gates, kubelet 1.37 and containerd 2 (CDI), our webhook and agent, and no
// device plugin: `erdma-smcr dra-plugin` runs in the node with its ServiceAccount's token (bound
// to a pod on the node, as the DaemonSet's) and the RBAC and DeviceClass of
// manifests/components/dra. The scheduler allocates from our ResourceSlice, the kubelet calls our
// plugin over its sockets, containerd injects the devices from our CDI spec, and the container
// sees them; the claim's status says what it got, and a downed port shows on the pod (#95).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerdAvailable } from '../../harness/containerd.js';
import { ensureBinaries, type ControlPlane } from '../../harness/k8s/control-plane.js';
import type { KubeNode } from '../../harness/k8s/node.js';
import { APP, startSingleNode, type SingleNode } from '../../harness/k8s/single-node.js';
import { eventsWithReason } from '../../harness/k8s/events.js';
import { until as poll } from '../../helpers/wait.js';
import { cniPlugins, requires } from '../../helpers/requires.js';

const why = requires('the DRA suite', ensureBinaries, containerdAvailable, cniPlugins);

const NODE = 'ecs-erdma-dra';
const NODE_IP = '10.200.0.5';
const DRIVER = 'erdma.smcr.erdma.io';
const SLICE = `${NODE}-${DRIVER}`;

type Obj = {
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [k: string]: any;
};

describe.skipIf(why !== '')(
  'eRDMA through DRA on a real cluster: ResourceSlice → scheduler → kubelet → our DRA plugin → CDI → containerd',
  () => {
    let cluster: SingleNode | undefined;
    let cp: ControlPlane;
    let node: KubeNode;
    let hostRoot: string;
    let cdiDir: string;

    const kubectl = async (...args: string[]): Promise<string> => {
      const r = await cp.kubectl(args);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const getJson = async (...args: string[]): Promise<Obj & { items: Obj[] }> =>
      JSON.parse(await kubectl('get', '-o', 'json', ...args));
    const until = <T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 90_000) =>
      poll(what, f, {
        timeoutMs,
        intervalMs: 300,
        retryErrors: true,
        details: () =>
          `--- dra ---\n${node?.logs('dra').slice(-3000)}\n--- kubelet ---\n${node?.logs('kubelet').slice(-3000)}`,
      });
    const apply = async (obj: object): Promise<void> => {
      const r = await cp.kubectl(['apply', '-f', '-'], JSON.stringify(obj));
      if (r.status !== 0) throw new Error(`apply: ${r.stderr}`);
    };
    const slice = async (): Promise<Obj | undefined> =>
      (await getJson('resourceslices', '--field-selector', `spec.nodeName=${NODE}`)).items.find(
        (s) => s.spec.driver === DRIVER,
      );
    const pod = (name: string, spec: Record<string, unknown>, annotations = {}): object => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'apps', annotations },
      spec: {
        terminationGracePeriodSeconds: 1,
        ...spec,
        containers: [
          {
            name: 'app',
            image: APP,
            imagePullPolicy: 'Never',
            ...((spec.containers as object[] | undefined)?.[0] ?? {}),
          },
        ],
      },
    });
    const running = (name: string): Promise<Obj> =>
      until(`${name} Running`, async () => {
        const p = await getJson('pod', '-n', 'apps', name);
        return p.status.phase === 'Running' ? p : undefined;
      }).catch(async (err: Error) => {
        throw new Error(
          `${err.message}\n--- describe ---\n${(await cp.kubectl(['describe', 'pod', '-n', 'apps', name])).stdout.slice(-3000)}`,
        );
      });
    /** A pod with one claim from a template of our class whose request selects by `expression`. */
    const claimPod = async (name: string, template: string, expression: string): Promise<void> => {
      await apply({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceClaimTemplate',
        metadata: { name: template, namespace: 'apps' },
        spec: {
          spec: {
            devices: {
              requests: [
                {
                  name: 'erdma',
                  exactly: { deviceClassName: DRIVER, selectors: [{ cel: { expression } }] },
                },
              ],
            },
          },
        },
      });
      await apply(
        pod(name, {
          resourceClaims: [{ name: 'erdma', resourceClaimTemplateName: template }],
          containers: [{ resources: { claims: [{ name: 'erdma' }] } }],
        }),
      );
    };
    /** The scheduler's message while a pod is unschedulable. */
    const unschedulable = (name: string): Promise<string> =>
      until(`${name} unschedulable`, async () => {
        const p = await getJson('pod', '-n', 'apps', name);
        const c = (p.status.conditions ?? []).find(
          (x: { type: string }) => x.type === 'PodScheduled',
        );
        return c?.status === 'False' && c.message ? (c.message as string) : undefined;
      });
    const inPod = async (name: string, ...cmd: string[]): Promise<string> =>
      (await kubectl('exec', '-n', 'apps', name, '--', ...cmd)).trim();

    beforeAll(async () => {
      cluster = await startSingleNode({
        node: NODE,
        nodeIp: NODE_IP,
        devicePlugin: false,
        dra: true,
      });
      ({ cp, node, hostRoot, cdiDir } = cluster);
      await until("our ResourceSlice with the node's three devices", async () =>
        (await slice())?.spec.devices.length === 3 ? true : undefined,
      );
    }, 300_000);

    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    it("publishes the node's eRDMA devices with their SMC attributes, and writes nothing while nothing changes", async () => {
      const s = (await slice())!;
      expect(s.metadata.name).toBe(SLICE);
      expect(s.spec.pool).toMatchObject({ name: NODE, resourceSliceCount: 1 });
      const byName = Object.fromEntries(
        (
          s.spec.devices as { name: string; attributes: Record<string, Record<string, unknown>> }[]
        ).map((d) => [d.name, d]),
      );
      // The fixture's third eRDMA device runs in compat mode (named roce*), its port down: listed,
      // tainted, and no SMC-R.
      expect(Object.keys(byName).sort()).toEqual(['erdma-0', 'erdma-2', 'rocep0s6']);
      expect(byName['rocep0s6']!.attributes).toMatchObject({
        driverMode: { string: 'compat' },
        smcrCapable: { bool: false },
      });
      expect(
        (s.spec.devices as { name: string; taints?: { key: string }[] }[]).find(
          (d) => d.name === 'rocep0s6',
        )?.taints?.[0]?.key,
      ).toBe(`${DRIVER}/port-down`);
      const a = byName['erdma-0']!.attributes;
      expect(a).toMatchObject({
        rdmaDevice: { string: 'erdma_0' },
        driverMode: { string: 'default' },
        portState: { string: 'ACTIVE' },
        smcrCapable: { bool: true },
        numaNode: { int: 0 },
        'resource.kubernetes.io/numaNode': { int: 0 },
        smcMechanism: { string: expect.any(String) },
      });
      expect(a.mac?.string).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
      expect(a.pnetId?.string).toMatch(/^[0-9A-F]+$/);
      expect(a.kernelVersion?.version).toMatch(/^\d+\.\d+\.\d+$/);
      // erdma_2 has no NUMA node in the fixture: no NUMA attribute rather than a wrong one.
      expect(byName['erdma-2']!.attributes.numaNode).toBeUndefined();
      const generation = s.spec.pool.generation;
      const rv = s.metadata.resourceVersion;
      await new Promise((r) => setTimeout(r, 3000)); // six passes of the plugin
      const again = (await slice())!;
      expect([again.spec.pool.generation, again.metadata.resourceVersion]).toEqual([
        generation,
        rv,
      ]);
    });

    it('(a) a pod asking aliyun/erdma: 1 on a node with no device plugin gets a device through DRA', async () => {
      await apply(
        pod('plain-erdma', {
          containers: [{ resources: { limits: { 'aliyun/erdma': '1' } } }],
        }),
      );
      const p = await running('plain-erdma');
      // The scheduler's claim for the extended resource, allocated from our slice.
      const claims = (await getJson('resourceclaims', '-n', 'apps')).items.filter((c) =>
        (c.metadata as { ownerReferences?: { name: string }[] }).ownerReferences?.some(
          (o) => o.name === 'plain-erdma',
        ),
      );
      expect(claims).toHaveLength(1);
      const result = claims[0]!.status.allocation.devices.results[0];
      expect(result).toMatchObject({ driver: DRIVER, pool: NODE });
      console.log(
        `(a) claim ${claims[0]!.metadata.name}: ${JSON.stringify(claims[0]!.status.allocation.devices.results)}; pod ${JSON.stringify(p.status.extendedResourceClaimStatus ?? {})}`,
      );
      // The claim says what it got (status.devices, written by our driver after preparing it).
      const withStatus = await until("the claim's device status", async () => {
        const c = await getJson('resourceclaim', '-n', 'apps', claims[0]!.metadata.name);
        return c.status.devices?.length ? c : undefined;
      });
      const status = withStatus.status.devices[0];
      expect(status).toMatchObject({
        driver: DRIVER,
        pool: NODE,
        device: result.device,
        conditions: [{ type: 'Ready', status: 'True', reason: 'PortActive' }],
        data: {
          rdmaDevice: expect.stringMatching(/^erdma_\d$/),
          pnetId: expect.stringMatching(/^[0-9A-F]+$/),
          portState: 'ACTIVE',
          smcMechanism: expect.any(String),
        },
        networkData: { hardwareAddress: expect.stringMatching(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/) },
      });
      console.log(
        `(a) kubectl get resourceclaim ${claims[0]!.metadata.name} -o yaml: status.devices:\n${JSON.stringify(withStatus.status.devices, null, 2)}`,
      );
      expect((await inPod('plain-erdma', 'ls', '/dev/infiniband')).split(/\s+/).sort()).toEqual(
        expect.arrayContaining(['rdma_cm']),
      );
      expect(await inPod('plain-erdma', 'sh', '-c', 'echo $ERDMA_DEVICES')).toMatch(/^erdma_\d$/);
      // Our CDI spec for the claim, which containerd read.
      const spec = JSON.parse(
        readFileSync(join(cdiDir, `${DRIVER}-erdma_${claims[0]!.metadata.uid}.json`), 'utf8'),
      ) as { kind: string; devices: { containerEdits: { deviceNodes: { path: string }[] } }[] };
      expect(spec.kind).toBe(`${DRIVER}/erdma`);
      expect(spec.devices[0]!.containerEdits.deviceNodes.map((d) => d.path)).toContain(
        '/dev/infiniband/rdma_cm',
      );
      console.log(
        `(a) kubelet: ${node
          .logs('kubelet')
          .split('\n')
          .filter((l) => /erdma\.smcr\.erdma\.io|NodePrepareResources/.test(l))
          .slice(-3)
          .join('\n')}`,
      );
      console.log(
        `(a) our plugin: ${
          node
            .logs('dra')
            .split('\n')
            .filter((l) => l.includes('claim prepared'))
            .slice(-1)[0]
        }`,
      );
    });

    it('(b) a claim whose CEL selects our SMC attribute and a NUMA node gets that device', async () => {
      await claimPod(
        'by-cel',
        'smc-numa0',
        `device.attributes["${DRIVER}"].smcrCapable && device.attributes["resource.kubernetes.io"].?numaNode.orValue(-1) == 0`,
      );
      await running('by-cel');
      const claim = (await getJson('resourceclaims', '-n', 'apps')).items.find((c) =>
        c.metadata.name.startsWith('by-cel-erdma'),
      )!;
      expect(claim.status.allocation.devices.results[0]).toMatchObject({
        driver: DRIVER,
        pool: NODE,
        device: 'erdma-0',
      });
      expect(await inPod('by-cel', 'sh', '-c', 'echo $ERDMA_DEVICES')).toBe('erdma_0');
    });

    it('(c) an annotated SMC-R pod end to end: the webhook asks for aliyun/erdma, DRA serves it, our CNI plugin and the agent act', async () => {
      await apply(pod('smcr-dra', {}, { 'network.alibabacloud.com/erdma-smcr': 'true' }));
      const p = await running('smcr-dra');
      expect(p.spec.containers[0].resources.limits['aliyun/erdma']).toBe('1');
      expect(await inPod('smcr-dra', 'cat', '/proc/sys/net/ipv6/conf/all/disable_ipv6')).toBe('1');
      expect(await inPod('smcr-dra', 'sh', '-c', 'echo $ERDMA_DEVICES')).toMatch(/^erdma_\d$/);
      const events = await until('our Event', () =>
        eventsWithReason(getJson, p, 'SMCRUnavailable'),
      );
      expect(events.find((e) => e.reason === 'SMCRUnavailable')?.message).toMatch(
        /no SMC mechanism was active on its node/,
      );
    });

    it('(d) two containers, each naming one request of one claim, are each told of their own device (#102)', async () => {
      const request = (name: string, rdma: string) => ({
        name,
        exactly: {
          deviceClassName: DRIVER,
          selectors: [
            { cel: { expression: `device.attributes["${DRIVER}"].rdmaDevice == "${rdma}"` } },
          ],
        },
      });
      await apply({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceClaimTemplate',
        metadata: { name: 'two-requests', namespace: 'apps' },
        spec: {
          spec: {
            devices: { requests: [request('first', 'erdma_0'), request('second', 'erdma_2')] },
          },
        },
      });
      const container = (name: string, req: string) => ({
        name,
        image: APP,
        imagePullPolicy: 'Never',
        resources: { claims: [{ name: 'erdma', request: req }] },
      });
      await apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'per-container', namespace: 'apps' },
        spec: {
          terminationGracePeriodSeconds: 1,
          resourceClaims: [{ name: 'erdma', resourceClaimTemplateName: 'two-requests' }],
          containers: [container('a', 'first'), container('b', 'second')],
        },
      });
      await running('per-container');
      const told = async (c: string) =>
        (
          await kubectl(
            'exec',
            '-n',
            'apps',
            'per-container',
            '-c',
            c,
            '--',
            'sh',
            '-c',
            'echo "$ERDMA_DEVICES $ERDMA_PNETIDS"; ls /dev/infiniband | sort | tr "\\n" " "',
          )
        ).trim();
      const a = await told('a');
      const b = await told('b');
      console.log(`(d) container a: ${a}\n(d) container b: ${b}`);
      // Each its own device, its PNETID and its verbs node; not the other's (before #102 both
      // were told "erdma_0,erdma_2").
      const [aEnv = '', aNodes = ''] = a.split('\n');
      const [bEnv = '', bNodes = ''] = b.split('\n');
      expect(aEnv).toMatch(/^erdma_0 [0-9A-F]+$/);
      expect(bEnv).toMatch(/^erdma_2 [0-9A-F]+$/);
      expect(aEnv.split(' ')[1]).not.toBe(bEnv.split(' ')[1]);
      // erdma_0's verbs node is a's alone (the fixture's erdma_2 has none: b gets rdma_cm only).
      expect(aNodes.trim().split(' ')).toEqual(['rdma_cm', 'uverbs0']);
      expect(bNodes.trim().split(' ')).toEqual(['rdma_cm']);
    }, 120_000);

    it("a claim no device satisfies stays Pending with the scheduler's reason (the negative control)", async () => {
      await claimPod(
        'no-such-device',
        'numa7',
        `device.attributes["${DRIVER}"].?numaNode.orValue(-1) == 7`,
      );
      const reason = await unschedulable('no-such-device');
      console.log(`negative control, the scheduler: ${reason}`);
      expect(reason).toMatch(/cannot allocate all claims/);
      expect((await getJson('pod', '-n', 'apps', 'no-such-device')).spec.nodeName).toBeUndefined();
    });

    it('a device whose port goes down is tainted, and a claim for it is not allocated again', async () => {
      const state = join(hostRoot, 'sys/class/infiniband/erdma_0/ports/1/state');
      writeFileSync(state, '1: DOWN\n');
      try {
        await until('erdma-0 tainted', async () => {
          const d = (await slice())?.spec.devices.find(
            (x: { name: string }) => x.name === 'erdma-0',
          );
          return d?.taints?.[0]?.key === `${DRIVER}/port-down` ? true : undefined;
        });
        const d = (await slice())!.spec.devices.find((x: { name: string }) => x.name === 'erdma-0');
        expect(d.attributes.portState).toEqual({ string: 'DOWN' });
        await claimPod(
          'on-down-port',
          'erdma0',
          `device.attributes["${DRIVER}"].rdmaDevice == "erdma_0"`,
        );
        const reason = await unschedulable('on-down-port');
        console.log(`port down, the scheduler: ${reason}`);
        // The pod that holds erdma-0 is told: the kubelet shows the health our driver streams it
        // (KEP-4680) in the container's status, under the claim's name and the device's CDI ID,
        // and the claim's device status turns not Ready.
        const health = await until("by-cel's container status: erdma-0 Unhealthy", async () => {
          const p = await getJson('pod', '-n', 'apps', 'by-cel');
          const statuses = (p.status.containerStatuses?.[0]?.allocatedResourcesStatus ?? []) as {
            name: string;
            resources?: { resourceID: string; health?: string; message?: string }[];
          }[];
          const r = statuses.flatMap((x) => x.resources ?? []);
          return r.some((x) => /-erdma-0$/.test(x.resourceID) && x.health === 'Unhealthy')
            ? statuses
            : undefined;
        });
        console.log(
          `port down, kubectl get pod by-cel -o yaml: allocatedResourcesStatus:\n${JSON.stringify(health, null, 2)}`,
        );
        const byCelClaim = (await getJson('resourceclaims', '-n', 'apps')).items.find((c) =>
          c.metadata.name.startsWith('by-cel-erdma'),
        )!;
        await until("by-cel's claim: erdma-0 not Ready", async () => {
          const c = await getJson('resourceclaim', '-n', 'apps', byCelClaim.metadata.name);
          const d = (c.status.devices ?? [])[0];
          return d?.conditions?.[0]?.status === 'False' && d.data.portState === 'DOWN'
            ? true
            : undefined;
        });
        // The pods already running on it keep their devices.
        expect((await getJson('pod', '-n', 'apps', 'by-cel')).status.phase).toBe('Running');
      } finally {
        writeFileSync(state, '4: ACTIVE\n');
      }
      await running('on-down-port');
      await until("by-cel's container status: erdma-0 Healthy again", async () => {
        const p = await getJson('pod', '-n', 'apps', 'by-cel');
        const r = (
          (p.status.containerStatuses?.[0]?.allocatedResourcesStatus ?? []) as {
            resources?: { resourceID: string; health?: string }[];
          }[]
        ).flatMap((x) => x.resources ?? []);
        return r.some((x) => /-erdma-0$/.test(x.resourceID) && x.health === 'Healthy')
          ? true
          : undefined;
      });
    }, 240_000);

    it('a restarted plugin answers a prepared claim from its checkpoint, and the slice a kubelet wiped comes back', async () => {
      await cluster!.stopDra();
      // What the kubelet does 30 s after a driver went away, and when it starts: delete its slices.
      await kubectl('delete', 'resourceslice', SLICE);
      await cluster!.startDra();
      await until('the slice back', async () =>
        (await slice())?.spec.devices.length === 3 ? true : undefined,
      );
      // A new pod still gets a device, and the old ones kept theirs.
      await apply(
        pod('after-restart', { containers: [{ resources: { limits: { 'aliyun/erdma': '1' } } }] }),
      );
      await running('after-restart');
      expect((await getJson('pod', '-n', 'apps', 'plain-erdma')).status.phase).toBe('Running');
      // Deleting a pod unprepares its claim: its CDI spec goes.
      const claims = (await getJson('resourceclaims', '-n', 'apps')).items;
      const uid = claims.find((c) => c.metadata.name.startsWith('by-cel-erdma'))!.metadata.uid;
      await kubectl('delete', 'pod', '-n', 'apps', 'by-cel', '--wait=true', '--timeout=60s');
      await until('the claim unprepared', async () => {
        try {
          readFileSync(join(cdiDir, `${DRIVER}-erdma_${uid}.json`));
          return undefined;
        } catch {
          return true;
        }
      });
    });
  },
);
