// From the device plugin to DRA on a running node, and back (#86 item 7), as docs/agent.md's
// runbook does it, on the real 1.37 kubelet and scheduler: our DRA driver runs beside the device
// plugin, then the device plugin leaves the node (its DaemonSet no longer runs there: here the
// agent's device plugin is switched off), then it comes back and the DRA driver leaves. Through
// each step a pod that holds a device keeps it, and a new pod asking aliyun/erdma: 1 runs, served
// by whichever path the node has.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerdAvailable } from '../../harness/containerd.js';
import { ensureBinaries, type ControlPlane } from '../../harness/k8s/control-plane.js';
import { APP, startSingleNode, type SingleNode } from '../../harness/k8s/single-node.js';
import { until as poll } from '../../helpers/wait.js';
import { cniPlugins, requires } from '../../helpers/requires.js';

const why = requires('the DRA migration suite', ensureBinaries, containerdAvailable, cniPlugins);

const NODE = 'ecs-erdma-mig';

type Obj = {
  metadata: { name: string };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [k: string]: any;
};

describe.skipIf(why !== '')(
  'from the device plugin to DRA on a running node, and back: no pod loses its device, no new pod fails',
  () => {
    let cluster: SingleNode | undefined;
    let cp: ControlPlane;
    const kubectl = async (...args: string[]): Promise<string> => {
      const r = await cp.kubectl(args);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const getJson = async (...args: string[]): Promise<Obj> =>
      JSON.parse(await kubectl('get', '-o', 'json', ...args)) as Obj;
    const until = <T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 120_000) =>
      poll(what, f, {
        timeoutMs,
        intervalMs: 500,
        retryErrors: true,
        details: () =>
          `--- kubelet ---\n${cluster?.node.logs('kubelet').slice(-2500)}\n--- dra ---\n${cluster?.node.logs('dra').slice(-1500)}`,
      });
    /** A pod asking aliyun/erdma: 1, Running; how it got its device. */
    const erdmaPod = async (name: string): Promise<'device plugin' | 'DRA'> => {
      const r = await cp.kubectl(
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name, namespace: 'apps' },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'app',
                image: APP,
                imagePullPolicy: 'Never',
                resources: { limits: { 'aliyun/erdma': '1' } },
              },
            ],
          },
        }),
      );
      expect(r.status, r.stderr).toBe(0);
      const p = await until(`${name} Running`, async () => {
        const x = await getJson('pod', '-n', 'apps', name);
        return x.status.phase === 'Running' ? x : undefined;
      }).catch(async (err: Error) => {
        throw new Error(
          `${err.message}\n${(await cp.kubectl(['describe', 'pod', '-n', 'apps', name])).stdout.slice(-2500)}`,
        );
      });
      return p.status.extendedResourceClaimStatus ? 'DRA' : 'device plugin';
    };
    const keepsDevice = async (name: string): Promise<void> => {
      expect((await getJson('pod', '-n', 'apps', name)).status.phase).toBe('Running');
      const ls = await kubectl('exec', '-n', 'apps', name, '--', 'ls', '/dev/infiniband');
      expect(ls.split(/\s+/)).toContain('rdma_cm');
    };
    const allocatable = async (): Promise<string | undefined> =>
      (await getJson('node', NODE)).status.allocatable?.['aliyun/erdma'];

    beforeAll(async () => {
      cluster = await startSingleNode({ node: NODE, nodeIp: '10.200.0.7', dra: true });
      cp = cluster.cp;
    }, 300_000);
    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    it('both on the node: the device plugin serves aliyun/erdma, DRA publishes its slice', async () => {
      expect(Number(await allocatable())).toBeGreaterThan(0);
      expect(await erdmaPod('before')).toBe('device plugin');
    });

    it('the device plugin leaves: its pod keeps its device, a new pod is served by DRA', async () => {
      await kubectl('cordon', NODE);
      await cluster!.restartAgent(false);
      const left = await until('aliyun/erdma no longer allocatable', async () => {
        const a = await allocatable();
        return a === undefined || a === '0' ? (a ?? 'absent') : undefined;
      });
      const n = await getJson('node', NODE);
      console.log(
        `device plugin gone: allocatable ${left}, capacity ${n.status.capacity?.['aliyun/erdma'] ?? 'absent'}`,
      );
      await kubectl('uncordon', NODE);
      expect(await erdmaPod('after')).toBe('DRA');
      await keepsDevice('before');
    });

    it('and back: the device plugin returns, the DRA driver leaves; every pod keeps its device', async () => {
      await kubectl('cordon', NODE);
      await cluster!.restartAgent(true);
      await until('aliyun/erdma allocatable again', async () =>
        Number(await allocatable()) > 0 ? true : undefined,
      );
      await cluster!.stopDra();
      await kubectl('uncordon', NODE);
      expect(await erdmaPod('back')).toBe('device plugin');
      await keepsDevice('before');
      await keepsDevice('after');
    });
  },
);
