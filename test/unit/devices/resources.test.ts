// Resources as configuration (#24): the selectors over a fixture node with eRDMA, compat-mode and
// mlx5 devices, the start-time refusals, and a shared rdma/hca resource served over real gRPC to
// the protocol-exact test kubelet (test/helpers/fake-kubelet.ts): many identical IDs, every
// selected device in each container, NUMA topology for devices on two nodes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { discover } from '../../../src/devices/discovery.js';
import { ErdmaDevicePlugin } from '../../../src/deviceplugin/plugin.js';
import { matches, servedResources } from '../../../src/devices/resources.js';
import { loadConfig } from '../../../src/config/load.js';
import { FakeKubelet, type DeviceMsg } from '../../helpers/fake-kubelet.js';
import { addDevice } from '../../helpers/sysfs.js';
import { until } from '../../helpers/wait.js';

const NODE_A = 'test/fixtures/sysfs/node-a';
const agentConfig = (resources: unknown, hostRoot = NODE_A) =>
  loadConfig({ flags: { 'agent.hostRoot': hostRoot, 'agent.resources': resources } }).agent;
const hca = { name: 'rdma/hca', selector: { drivers: ['mlx5_core'] }, mode: 'shared' };
const erdma = { name: 'aliyun/erdma', selector: { vendors: ['0x1ded'], rdmaDevice: '^erdma_' } };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('resources as configuration', () => {
  it('absent: exactly the one eRDMA resource of before', () => {
    const a = loadConfig({ flags: { 'agent.hostRoot': NODE_A } }).agent;
    const [r, ...more] = servedResources(a, () => discover({ hostRoot: NODE_A }));
    expect(more).toEqual([]);
    expect(r).toMatchObject({
      name: 'aliyun/erdma',
      mode: 'exclusive',
      slots: 64,
      allocation: 'numa',
      socketName: 'erdma-smcr.sock',
    });
    // The node's eRDMA devices (erdma_N, and rocepXsY in compat mode), not its Mellanox HCA.
    expect(r!.discover().map((d) => d.name)).toEqual(['erdma_0', 'erdma_2', 'rocep0s6']);
  });

  it('serves aliyun/erdma and a shared rdma/hca side by side, each with its own devices and socket', () => {
    const served = servedResources(agentConfig([erdma, hca]), () => []);
    expect(
      served.map((r) => [r.name, r.mode, r.slots, r.socketName, r.discover().map((d) => d.name)]),
    ).toEqual([
      ['aliyun/erdma', 'exclusive', 64, 'erdma-smcr-aliyun-erdma.sock', ['erdma_0', 'erdma_2']],
      ['rdma/hca', 'shared', 1000, 'erdma-smcr-rdma-hca.sock', ['mlx5_0']],
    ]);
  });

  it('selects by driver, vendor, PCI device, device name and netdev; every given field must match', () => {
    const all = discover({ hostRoot: NODE_A, anyDriver: true });
    const names = (sel: Parameters<typeof matches>[1]) =>
      all.filter((d) => matches(d, sel)).map((d) => d.name);
    expect(names({ drivers: ['mlx5_core'] })).toEqual(['mlx5_0']);
    expect(names({ rdmaDevice: '^roce' })).toEqual(['rocep0s6']);
    expect(names({ vendors: ['0x1DED'], rdmaDevice: '^roce' })).toEqual(['rocep0s6']);
    expect(names({ drivers: ['mlx5_core'], rdmaDevice: '^erdma' })).toEqual([]);
  });

  it.each([
    [
      'a selector matching nothing',
      [{ name: 'rdma/hca', selector: { drivers: ['bnxt_re'] }, mode: 'shared' }],
      /rdma\/hca: its selector .*bnxt_re.* matches no RDMA device \(this node has erdma_0 \(driver erdma.*mlx5_0 \(driver mlx5_core/,
    ],
    [
      'two resources claiming one device exclusively',
      [erdma, { name: 'example.com/rdma', selector: { rdmaDevice: '^erdma_0$' } }],
      /aliyun\/erdma and example\.com\/rdma both claim erdma_0 exclusively/,
    ],
    [
      'two resources with one name',
      [hca, { ...hca, selector: { rdmaDevice: 'mlx' } }],
      /two resources have the name rdma\/hca/,
    ],
  ])('refuses %s at start, saying what the node has', (_, resources, message) => {
    expect(() => servedResources(agentConfig(resources), () => [])).toThrow(message);
  });

  it('an optional resource whose selector matches nothing here is served with no devices, not refused', () => {
    const none = {
      name: 'rdma/hca',
      selector: { drivers: ['bnxt_re'] },
      mode: 'shared',
      optional: true,
    };
    const served = servedResources(agentConfig([erdma, none]), () => []);
    expect(served.map((r) => [r.name, r.socketName, r.discover().map((d) => d.name)])).toEqual([
      ['aliyun/erdma', 'erdma-smcr-aliyun-erdma.sock', ['erdma_0', 'erdma_2']],
      ['rdma/hca', 'erdma-smcr-rdma-hca.sock', []],
    ]);
    // optional waives only the empty selector: conflicts are still refused
    expect(() =>
      servedResources(
        agentConfig([erdma, { ...erdma, name: 'example.com/rdma', optional: true }]),
        () => [],
      ),
    ).toThrow(/both claim erdma_0 exclusively/);
    expect(() => agentConfig([{ ...none, optional: 'yes' }])).toThrow(/optional/);
  });

  it.each([
    ['an unknown mode', [{ ...hca, mode: 'pooled' }], /mode/],
    [
      'an empty selector',
      [{ name: 'rdma/hca', selector: {} }],
      /a selector needs at least one field/,
    ],
    [
      'a bad regular expression',
      [{ name: 'rdma/hca', selector: { rdmaDevice: '(' } }],
      /a valid regular expression/,
    ],
    [
      'a bad resource name',
      [{ name: 'hca', selector: { drivers: ['mlx5_core'] } }],
      /an extended resource name like rdma\/hca/,
    ],
  ])('refuses %s in the configuration itself', (_, resources, message) => {
    expect(() => agentConfig(resources)).toThrow(message);
  });
});

describe('a shared resource over gRPC', () => {
  it('optional and with no device yet: registers, advertises nothing, and advertises the device once it appears', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hca-'));
    const hostRoot = join(dir, 'host');
    addDevice(hostRoot, {
      name: 'erdma_0',
      driver: 'erdma',
      vendor: '0x1ded',
      guid: '0216:3eff:fe00:0001',
      numa: 0,
      uverbs: 'uverbs0',
    });
    const kubelet = new FakeKubelet(join(dir, 'kubelet'));
    const [r] = servedResources(
      agentConfig([{ ...hca, slots: 8, optional: true }], hostRoot),
      () => [],
    );
    const plugin = new ErdmaDevicePlugin({
      kubeletDir: join(dir, 'kubelet'),
      resourceName: r!.name,
      socketName: r!.socketName,
      slotsPerDevice: r!.slots,
      allocation: r!.allocation,
      mode: r!.mode,
      pollMs: 100,
      discover: r!.discover,
      logger: pino({ level: 'silent' }),
    });
    cleanups.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => kubelet.stop(),
      () => plugin.stop(),
    );
    await kubelet.start();
    await plugin.start();
    await until('registration', () => kubelet.registrations.length === 1);
    expect(kubelet.registrations[0]).toMatchObject({ resource_name: 'rdma/hca' });
    expect(await until('the first list', () => kubelet.updates[0])).toEqual([]);
    addDevice(hostRoot, {
      name: 'mlx5_0',
      driver: 'mlx5_core',
      vendor: '0x15b3',
      guid: 'b859:9f03:00c1:0a00',
      numa: 0,
      uverbs: 'uverbs1',
    });
    const devs = (await until('the device to be advertised', () =>
      kubelet.updates[kubelet.updates.length - 1]?.length
        ? kubelet.updates[kubelet.updates.length - 1]
        : undefined,
    )) as DeviceMsg[];
    expect(devs.map((d) => [d.ID, d.health])).toEqual(
      Array.from({ length: 8 }, (_, i) => [`hca-${i}`, 'Healthy']),
    );
  });

  it('advertises N identical IDs and gives every selected device to each container', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hca-'));
    const hostRoot = join(dir, 'host');
    addDevice(hostRoot, {
      name: 'mlx5_0',
      driver: 'mlx5_core',
      vendor: '0x15b3',
      guid: 'b859:9f03:00c1:0a00',
      numa: 0,
      uverbs: 'uverbs0',
    });
    addDevice(hostRoot, {
      name: 'mlx5_1',
      driver: 'mlx5_core',
      vendor: '0x15b3',
      guid: 'b859:9f03:00c1:0a01',
      numa: 1,
      uverbs: 'uverbs1',
    });
    const kubelet = new FakeKubelet(join(dir, 'kubelet'));
    const [r] = servedResources(agentConfig([{ ...hca, slots: 16 }], hostRoot), () => []);
    const plugin = new ErdmaDevicePlugin({
      kubeletDir: join(dir, 'kubelet'),
      resourceName: r!.name,
      socketName: r!.socketName,
      slotsPerDevice: r!.slots,
      allocation: r!.allocation,
      mode: r!.mode,
      pollMs: 200,
      discover: r!.discover,
      logger: pino({ level: 'silent' }),
    });
    cleanups.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => kubelet.stop(),
      () => plugin.stop(),
    );
    await kubelet.start();
    await plugin.start();
    await until('registration', () => kubelet.registrations.length === 1);
    expect(kubelet.registrations[0]).toMatchObject({
      resource_name: 'rdma/hca',
      endpoint: 'erdma-smcr-rdma-hca.sock',
    });
    const devs = (await until(
      'list',
      () => kubelet.updates[kubelet.updates.length - 1],
    )) as DeviceMsg[];
    expect(devs).toHaveLength(16);
    expect(devs.map((d) => [d.ID.replace(/\d+$/, 'N'), d.health, d.topology ?? null])).toEqual(
      Array(16).fill(['hca-N', 'Healthy', null]),
    );
    const alloc = await kubelet.unary<{
      container_responses: { devices: { host_path: string }[]; envs: Record<string, string> }[];
    }>('Allocate', {
      container_requests: [{ devicesIDs: ['hca-3'] }, { devicesIDs: ['hca-9'] }],
    });
    for (const c of alloc.container_responses) {
      expect(c.devices.map((d) => d.host_path)).toEqual([
        '/dev/infiniband/uverbs0',
        '/dev/infiniband/uverbs1',
        '/dev/infiniband/rdma_cm',
      ]);
      expect(c.envs.ERDMA_DEVICES).toBe('mlx5_0,mlx5_1');
    }
  });
});
