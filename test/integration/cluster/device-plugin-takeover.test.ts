// #87 item 5: on a node where another device plugin already registered aliyun/erdma (ACK's eRDMA
// controller serves it too; the kubelet keeps the newest registration), our device plugin does not
// silently take it over: it holds back, the agent says so on the Node (the label
// smcr.erdma.io/device-plugin-reason=other-registrant and a DevicePluginHeldBack Event), and it
// serves only when told to (agent.takeOverResources; chart: devices.takeOver). On the real kubelet
// 1.37. The other registrant is a real device plugin speaking the kubelet's protocol: ours, run as
// a second process in shared mode under ACK's socket name (<unix time>-erdma.sock), so that its
// device IDs (erdma-0...) are not ours (erdma_0-0...), as ACK's are not; ACK's own controller
// needs Alibaba's metadata service and real eRDMA devices, which this machine has not.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerdAvailable } from '../../harness/containerd.js';
import { ensureBinaries } from '../../harness/k8s/control-plane.js';
import { startSingleNode, type SingleNode } from '../../harness/k8s/single-node.js';
import { until as poll } from '../../helpers/wait.js';
import { cniPlugins, requires } from '../../helpers/requires.js';

const why = requires(
  'the device plugin take-over suite',
  ensureBinaries,
  containerdAvailable,
  cniPlugins,
);

const NODE = 'ecs-erdma-two';
const OTHER_SLOTS = 5;

type NodeObj = {
  metadata: { labels?: Record<string, string> };
  status: { allocatable?: Record<string, string>; capacity?: Record<string, string> };
};
type EventObj = {
  reason: string;
  message: string;
  type: string;
  involvedObject: { kind: string; name: string };
};

describe.skipIf(why !== '')('a second registrant of aliyun/erdma on the real kubelet', () => {
  let cluster: SingleNode | undefined;
  const kubectl = async (...args: string[]): Promise<string> => {
    const r = await cluster!.cp.kubectl(args);
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const node = async (): Promise<NodeObj> =>
    JSON.parse(await kubectl('get', '-o', 'json', 'node', NODE)) as NodeObj;
  const nodeEvents = async (): Promise<EventObj[]> =>
    (
      JSON.parse(
        await kubectl(
          'get',
          '-o',
          'json',
          'events',
          '-n',
          'default',
          '--field-selector',
          `involvedObject.name=${NODE}`,
        ),
      ) as { items: EventObj[] }
    ).items;
  const until = <T>(what: string, f: () => Promise<T | undefined>) =>
    poll(what, f, {
      timeoutMs: 90_000,
      intervalMs: 500,
      retryErrors: true,
      details: () =>
        `--- kubelet ---\n${cluster?.node.logs('kubelet').slice(-2500)}\n--- agent ---\n${cluster?.node.logs('agent').slice(-2500)}`,
    });
  const registrations = (): string[] =>
    cluster!.node
      .logs('kubelet')
      .split('\n')
      .filter((l) =>
        /Got registration request from device plugin with resource.*aliyun\/erdma/.test(l),
      );
  const allocatable = async (): Promise<number> =>
    Number((await node()).status.allocatable?.['aliyun/erdma'] ?? 0);

  beforeAll(async () => {
    // The agent without its device plugin first: the node is capable, nobody serves aliyun/erdma.
    cluster = await startSingleNode({ node: NODE, nodeIp: '10.99.0.12', devicePlugin: false });
    const c = cluster;
    const config = join(c.dir, 'other.yaml');
    writeFileSync(
      config,
      yaml.dump({
        agent: {
          deviceRoot: c.hostRoot,
          pollMs: 500,
          metricsPort: 0,
          devicePluginStateFile: '/run/erdma-smcr/other.json',
          resources: [
            {
              name: 'aliyun/erdma',
              selector: { vendors: ['0x1ded'] },
              mode: 'shared',
              slots: OTHER_SLOTS,
              socketName: '1700000000-erdma.sock',
            },
          ],
        },
      }),
    );
    c.node.spawnInNode(
      process.execPath,
      [
        join(process.cwd(), 'bin/erdma-smcr.js'),
        '-c',
        config,
        'device-plugin',
        '--host-root',
        c.hostRoot,
      ],
      'other',
    );
    await until('the other registrant serving aliyun/erdma', async () =>
      (await allocatable()) === OTHER_SLOTS ? true : undefined,
    );
  }, 300_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('ours holds back: the kubelet keeps the other one, and the Node says why (label, Event)', async () => {
    await cluster!.restartAgent(true);
    const n = await until('the device-plugin-reason label', async () => {
      const x = await node();
      return x.metadata.labels?.['smcr.erdma.io/device-plugin-reason'] === 'other-registrant'
        ? x
        : undefined;
    });
    expect(n.metadata.labels?.['smcr.erdma.io/capable']).toBe('true');
    const ev = await until('a DevicePluginHeldBack Event', async () =>
      (await nodeEvents()).find((e) => e.reason === 'DevicePluginHeldBack'),
    );
    console.log(`Event ${ev.type} ${ev.reason}: ${ev.message}`);
    expect(ev.type).toBe('Warning');
    expect(ev.message).toMatch(
      /^aliyun\/erdma is registered with the kubelet by another device plugin \(its device IDs: erdma-0, erdma-1, erdma-2\): erdma-smcr's device plugin does not take it over/,
    );
    // Held back for long enough that a silent registration would have shown: still theirs.
    await new Promise((r) => setTimeout(r, 5000));
    expect(await allocatable()).toBe(OTHER_SLOTS);
    const said = cluster!.node.logs('agent');
    expect(said).toMatch(
      /another device plugin registered this resource with the kubelet: not taking it over/,
    );
    expect(said).not.toMatch(/"msg":"registered with the kubelet"/);
    // The kubelet saw one registration of aliyun/erdma: the other one's.
    expect(registrations()).toHaveLength(1);
  });

  it('told to take over, ours registers, the kubelet switches to it, and the Node says ours serves', async () => {
    await cluster!.restartAgent(true, { takeOverResources: true });
    const ours = await until('aliyun/erdma served by ours', async () => {
      const a = await allocatable();
      return a !== OTHER_SLOTS && a > 0 ? a : undefined;
    });
    console.log(
      `aliyun/erdma allocatable: ${OTHER_SLOTS} (the other registrant) -> ${ours} (ours)`,
    );
    await until('the label gone', async () =>
      (await node()).metadata.labels?.['smcr.erdma.io/device-plugin-reason'] === undefined
        ? true
        : undefined,
    );
    const ev = await until('a DevicePluginServing Event', async () =>
      (await nodeEvents()).find((e) => e.reason === 'DevicePluginServing'),
    );
    expect(ev.type).toBe('Normal');
    // The kubelet's own lines: the other registrant's registration, then ours.
    const lines = registrations();
    console.log(lines.join('\n'));
    expect(lines).toHaveLength(2);
  });
});
