// What a container gets for its RDMA devices (src/devices/container.ts), the one function
// both kubelet paths render: the device plugin's Allocate answer (deviceplugin/allocation.ts
// grant) and the DRA driver's CDI spec (dra/cdi.ts). A container given two devices is told of both
// on either path (#94 item 2: the CDI spec's one ERDMA_DEVICES= per device told it of one).
import { describe, expect, it } from 'vitest';
import { grant } from '../../../src/deviceplugin/allocation.js';
import { containerEdits, deviceEnv, envLines } from '../../../src/devices/container.js';
import type { RdmaDevice } from '../../../src/devices/discovery.js';
import { cdiIds, cdiSpec } from '../../../src/dra/cdi.js';
import type { PreparedClaim } from '../../../src/dra/claim.js';

const device = (name: string, uverbs: string, pnetId: string): RdmaDevice =>
  ({ name, uverbs, pnetId }) as RdmaDevice;
const two = [
  device('erdma_0', '/dev/infiniband/uverbs0', '00163E10F8B0'),
  device('erdma_2', '/dev/infiniband/uverbs2', '00163E10F8B2'),
];

describe('containerEdits: what a container holding RDMA devices gets', () => {
  it('each verbs node, rdma_cm once, host paths under the device root, and the devices as lists', () => {
    const e = containerEdits(two, '/host');
    expect(e.deviceNodes).toEqual([
      {
        path: '/dev/infiniband/uverbs0',
        hostPath: '/host/dev/infiniband/uverbs0',
        permissions: 'rw',
      },
      {
        path: '/dev/infiniband/uverbs2',
        hostPath: '/host/dev/infiniband/uverbs2',
        permissions: 'rw',
      },
      {
        path: '/dev/infiniband/rdma_cm',
        hostPath: '/host/dev/infiniband/rdma_cm',
        permissions: 'rw',
      },
    ]);
    expect(e.env).toEqual({
      ERDMA_DEVICES: 'erdma_0,erdma_2',
      ERDMA_PNETIDS: '00163E10F8B0,00163E10F8B2',
    });
  });

  it('a device without a verbs node adds none, one without a PNETID adds no PNETID', () => {
    const e = containerEdits([
      device('erdma_0', '', ''),
      device('erdma_3', '/dev/infiniband/uverbs3', '3A'),
    ]);
    expect(e.deviceNodes.map((n) => n.path)).toEqual([
      '/dev/infiniband/uverbs3',
      '/dev/infiniband/rdma_cm',
    ]);
    expect(e.env).toEqual({ ERDMA_DEVICES: 'erdma_0,erdma_3', ERDMA_PNETIDS: '3A' });
    expect(envLines(deviceEnv([device('erdma_0', '', '')]))).toEqual(['ERDMA_DEVICES=erdma_0']);
  });

  it('no devices: rdma_cm alone, and empty lists (which the CDI spec leaves out)', () => {
    const e = containerEdits([]);
    expect(e.deviceNodes.map((n) => n.path)).toEqual(['/dev/infiniband/rdma_cm']);
    expect(envLines(e.env)).toEqual([]);
  });

  it("the device plugin's Allocate and the DRA driver's CDI spec give the same two devices the same nodes and env", () => {
    const viaPlugin = grant(
      ['erdma_0-0', 'erdma_2-5'],
      [...two, device('erdma_4', '/dev/infiniband/uverbs4', '44')],
      'numa',
      '/host',
    );
    const claim: PreparedClaim = {
      uid: 'u-1',
      namespace: 'apps',
      name: 'two',
      devices: two.map((d, i) => ({
        requestNames: ['erdma'],
        poolName: 'node-a',
        deviceName: `erdma-${i * 2}`,
        rdmaDevice: d.name,
        uverbs: d.uverbs,
        pnetId: d.pnetId,
        cdiDeviceIds: cdiIds('u-1', `erdma-${i * 2}`),
      })),
    };
    const spec = cdiSpec(claim, '/host') as {
      containerEdits?: { env: string[] };
      devices: {
        containerEdits: { env?: string[]; deviceNodes: { path: string; hostPath: string }[] };
      }[];
    };
    // One request: each CDI device tells of both (a container gets both); no spec-wide env.
    expect(spec.containerEdits).toBeUndefined();
    expect(spec.devices.map((d) => d.containerEdits.env)).toEqual([
      envLines(viaPlugin.envs as never),
      envLines(viaPlugin.envs as never),
    ]);
    const cdiNodes = new Set(
      spec.devices.flatMap((d) =>
        d.containerEdits.deviceNodes.map((n) => `${n.path}=${n.hostPath}`),
      ),
    );
    const pluginNodes = new Set(viaPlugin.devices.map((d) => `${d.container_path}=${d.host_path}`));
    expect(cdiNodes).toEqual(pluginNodes);
    expect(pluginNodes.size).toBe(3);
  });
});

describe("the DRA driver's CDI spec: a container is told of the devices its requests got (#102)", () => {
  // The kubelet gives a container that names one request of a claim the CDI devices of that
  // request's devices only (resources.claims[].request; the extended-resource claim names one
  // request per container): what the runtime applies is each device's own edits.
  const prepared = (
    devices: { request: string; name: string; rdma: RdmaDevice }[],
  ): PreparedClaim => ({
    uid: 'u-2',
    namespace: 'apps',
    name: 'per-container',
    devices: devices.map((d) => ({
      requestNames: [d.request],
      poolName: 'node-a',
      deviceName: d.name,
      rdmaDevice: d.rdma.name,
      uverbs: d.rdma.uverbs,
      pnetId: d.rdma.pnetId,
      cdiDeviceIds: cdiIds('u-2', d.name),
    })),
  });
  type Spec = {
    containerEdits?: unknown;
    devices: { name: string; containerEdits: { env: string[]; deviceNodes: { path: string }[] } }[];
  };
  /** What a runtime applies for these CDI names: each device's env in order, the last of a name kept. */
  const envOf = (spec: Spec, names: string[]): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const d of spec.devices.filter((x) => names.some((n) => n.endsWith(`=${x.name}`))))
      for (const line of d.containerEdits.env) {
        const [k, v] = line.split('=') as [string, string];
        env[k] = v;
      }
    return env;
  };
  const third = device('erdma_4', '/dev/infiniband/uverbs4', '00163E10F8B4');

  it('two requests, one device each: each container is told of its own', () => {
    const spec = cdiSpec(
      prepared([
        { request: 'container-0-request-0', name: 'erdma-0', rdma: two[0]! },
        { request: 'container-1-request-0', name: 'erdma-2', rdma: two[1]! },
      ]),
      '/',
    ) as Spec;
    expect(spec.containerEdits).toBeUndefined();
    expect(envOf(spec, cdiIds('u-2', 'erdma-0'))).toEqual({
      ERDMA_DEVICES: 'erdma_0',
      ERDMA_PNETIDS: '00163E10F8B0',
    });
    expect(envOf(spec, cdiIds('u-2', 'erdma-2'))).toEqual({
      ERDMA_DEVICES: 'erdma_2',
      ERDMA_PNETIDS: '00163E10F8B2',
    });
    expect(spec.devices[0]!.containerEdits.deviceNodes.map((n) => n.path)).toEqual([
      '/dev/infiniband/uverbs0',
      '/dev/infiniband/rdma_cm',
    ]);
  });

  it("a request of two devices tells its container of both, not of the other request's", () => {
    const spec = cdiSpec(
      prepared([
        { request: 'pair', name: 'erdma-0', rdma: two[0]! },
        { request: 'pair', name: 'erdma-2', rdma: two[1]! },
        { request: 'single', name: 'erdma-4', rdma: third },
      ]),
      '/',
    ) as Spec;
    const pair = [...cdiIds('u-2', 'erdma-0'), ...cdiIds('u-2', 'erdma-2')];
    expect(envOf(spec, pair)).toEqual({
      ERDMA_DEVICES: 'erdma_0,erdma_2',
      ERDMA_PNETIDS: '00163E10F8B0,00163E10F8B2',
    });
    expect(envOf(spec, cdiIds('u-2', 'erdma-4')).ERDMA_DEVICES).toBe('erdma_4');
  });
});
