// The ResourceSlice our DRA driver publishes (src/dra/slice.ts), from discovered devices and
// the Node's facts: attribute names and kinds a CEL selector reads, sharing, the port-down taint.
import { describe, expect, it } from 'vitest';
import { comparable } from '../../../src/dra/publisher.js';
import {
  deviceName,
  kernelSemver,
  PORT_DOWN_TAINT,
  resourceSlice,
  sliceName,
  sliceSpec,
  type NodeInfo,
} from '../../../src/dra/slice.js';
import type { RdmaDevice } from '../../../src/devices/discovery.js';

const device = (name: string, o: Partial<RdmaDevice> = {}): RdmaDevice => ({
  name,
  driver: 'erdma',
  vendor: '0x1ded',
  pciDevice: '0x107f',
  nodeGuid: '0216:3eff:fe00:0001',
  ports: [{ port: 1, state: 'ACTIVE', linkLayer: 'Ethernet', healthy: true }],
  numaNode: 1,
  uverbs: '/dev/infiniband/uverbs0',
  netdev: 'eth1',
  mac: '02:16:3e:00:00:01',
  pnetId: '02163E000001',
  driverMode: 'default',
  smcrCapable: true,
  healthy: true,
  pciAddress: '0000:00:05.0',
  pcieRoot: 'pci0000:00',
  ...o,
});

const node: NodeInfo = {
  name: 'n1',
  uid: 'uid-n1',
  kernelVersion: '5.10.134-17.3.al8.x86_64',
  labels: {
    'smcr.erdma.io/capable': 'true',
    'smcr.erdma.io/mechanism': 'tcp2smc',
    'smcr.erdma.io/smcd-loopback': 'false',
    'smcr.erdma.io/erdma-reserved-ports': '30608-30623',
  },
};

describe('the ResourceSlice of a node', () => {
  it('gives each device what decides SMC-R, under our domain and the standard names', () => {
    const spec = sliceSpec(node, [device('erdma_0')], { slots: 64 }, 3);
    expect(spec).toMatchObject({
      driver: 'erdma.smcr.erdma.io',
      nodeName: 'n1',
      pool: { name: 'n1', generation: 3, resourceSliceCount: 1 },
    });
    const d = spec.devices[0]!;
    expect(d.name).toBe('erdma-0');
    expect(d.attributes).toEqual({
      rdmaDevice: { string: 'erdma_0' },
      driverMode: { string: 'default' },
      portState: { string: 'ACTIVE' },
      smcrCapable: { bool: true },
      netdev: { string: 'eth1' },
      mac: { string: '02:16:3e:00:00:01' },
      pnetId: { string: '02163E000001' },
      numaNode: { int: 1 },
      'resource.kubernetes.io/numaNode': { int: 1 },
      pciAddress: { string: '0000:00:05.0' },
      'resource.kubernetes.io/pcieRoot': { string: 'pci0000:00' },
      smcMechanism: { string: 'tcp2smc' },
      smcdLoopback: { bool: false },
      kernelVersion: { version: '5.10.134' },
      kernelRelease: { string: '5.10.134-17.3.al8.x86_64' },
      erdmaReservedPorts: { string: '30608-30623' },
    });
    // Shared as the device plugin shares it: one slot per allocation, 64 pods a device.
    expect(d.allowMultipleAllocations).toBe(true);
    expect(d.capacity).toEqual({
      slots: { value: '64', requestPolicy: { default: '1', validRange: { min: '1', max: '1' } } },
    });
    expect(d.taints).toBeUndefined();
  });

  it('taints a device whose port is down, and says it cannot carry SMC-R', () => {
    const down = device('erdma_1', {
      ports: [{ port: 1, state: 'DOWN', linkLayer: 'Ethernet', healthy: false }],
      healthy: false,
      smcrCapable: false,
      numaNode: -1,
    });
    const d = sliceSpec(node, [down], { slots: 1 }, 1).devices[0]!;
    expect(d.taints).toEqual([{ key: PORT_DOWN_TAINT, value: 'DOWN', effect: 'NoSchedule' }]);
    expect(d.attributes.smcrCapable).toEqual({ bool: false });
    expect(d.attributes.numaNode).toBeUndefined();
  });

  it('says a device cannot carry SMC-R when its node cannot, and names the mechanism none', () => {
    const plain = { ...node, labels: {} };
    const d = sliceSpec(plain, [device('erdma_0')], { slots: 1 }, 1).devices[0]!;
    expect(d.attributes.smcrCapable).toEqual({ bool: false });
    expect(d.attributes.smcMechanism).toEqual({ string: 'none' });
    expect(d.attributes.smcdLoopback).toBeUndefined();
  });

  it('names devices and the slice as the API takes them, and owns the slice by the Node', () => {
    expect(deviceName('erdma_0')).toBe('erdma-0');
    expect(deviceName('rocep0s6')).toBe('rocep0s6');
    expect(deviceName('_X_')).toBe('x');
    expect(sliceName('n1')).toBe('n1-erdma.smcr.erdma.io');
    const obj = resourceSlice(node, sliceSpec(node, [], { slots: 1 }, 1)) as {
      metadata: { ownerReferences: unknown[] };
    };
    expect(obj.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'uid-n1' },
    ]);
  });

  it('reads the kernel release as a semantic version where it starts as one', () => {
    expect(kernelSemver('6.6.88-5.1.alnx4.x86_64')).toBe('6.6.88');
    expect(kernelSemver('6.12')).toBe('6.12.0');
    expect(kernelSemver('unknown')).toBeUndefined();
  });

  it('compares slices without the generation and what the API server adds', () => {
    const a = sliceSpec(node, [device('erdma_0', { healthy: false })], { slots: 2 }, 1);
    const b = {
      ...sliceSpec(node, [device('erdma_0', { healthy: false })], { slots: 2 }, 9),
      devices: a.devices.map((d) => ({
        ...d,
        taints: d.taints!.map((t) => ({ ...t, timeAdded: '2026-12-02T00:00:00Z' })),
      })),
    };
    expect(comparable(b)).toBe(comparable(a));
    expect(comparable(sliceSpec(node, [device('erdma_0')], { slots: 3 }, 1))).not.toBe(
      comparable(a),
    );
  });
});
