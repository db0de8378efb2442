import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  grant,
  pluginDevices,
  preferredAllocation,
} from '../../../src/agent/deviceplugin/allocation.js';
import { discover, guidToMac } from '../../../src/agent/node/discovery.js';
import { runCli } from '../../helpers/cli.js';
import { addDevice, nodeA } from '../../helpers/sysfs.js';

const roots: string[] = [];
const tree = (): string => {
  const r = mkdtempSync(join(tmpdir(), 'sysfs-'));
  roots.push(r);
  return r;
};
afterEach(() => roots.splice(0).forEach((r) => rmSync(r, { recursive: true, force: true })));

describe('discovery', () => {
  it('finds eRDMA devices by driver or PCI vendor under both naming schemes and ignores others', () => {
    const root = tree();
    nodeA(root);
    const devs = discover({ hostRoot: root });
    expect(devs.map((d) => d.name)).toEqual(['erdma_0', 'erdma_2', 'rocep0s6']);
    expect(devs[0]).toMatchObject({
      driver: 'erdma',
      nodeGuid: '0216:3eff:fe10:f8b0',
      numaNode: 0,
      uverbs: '/dev/infiniband/uverbs0',
      netdev: 'eth0',
      mac: '00:16:3e:10:f8:b0',
      pnetId: '00163E10F8B0',
      driverMode: 'default',
      smcrCapable: true,
      ports: [{ port: 1, state: 'ACTIVE', linkLayer: 'Ethernet', healthy: true }],
    });
    expect(devs[1]).toMatchObject({ numaNode: -1, uverbs: '', netdev: '' });
    expect(devs[2]).toMatchObject({
      driverMode: 'compat',
      smcrCapable: false,
      healthy: false,
      ports: [{ state: 'DOWN', healthy: false }],
    });
  });

  it('serves other drivers only when configured', () => {
    const root = tree();
    addDevice(root, {
      name: 'rxe0',
      driver: 'rdma_rxe',
      vendor: '0x0000',
      guid: '0216:3eff:fe00:0001',
    });
    expect(discover({ hostRoot: root })).toEqual([]);
    expect(discover({ hostRoot: root, extraDrivers: ['rdma_rxe'] }).map((d) => d.name)).toEqual([
      'rxe0',
    ]);
  });

  it('returns nothing on a host without RDMA', () => {
    expect(discover({ hostRoot: tree() })).toEqual([]);
  });

  it('turns an EUI-64 node GUID into the ENI MAC', () => {
    expect(guidToMac('0216:3eff:fe10:f8b0')).toBe('00:16:3e:10:f8:b0');
    expect(guidToMac('b859:9f03:00a1:2b3c')).toBe('');
  });

  it('erdma-smcr devices -o json works on the shipped fixture, and --json says the same', async () => {
    const args = ['devices', '--host-root', 'test/fixtures/sysfs/node-a'];
    const r = await runCli([...args, '-o', 'json']);
    expect(r.code).toBe(0);
    expect((await runCli([...args, '--json'])).stdout).toBe(r.stdout);
    const bad = await runCli([...args, '-o', 'yaml']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/Allowed choices are text, json/);
    const devs = JSON.parse(r.stdout);
    expect(devs.map((d: { name: string }) => d.name)).toEqual(['erdma_0', 'erdma_2', 'rocep0s6']);
    for (const d of devs)
      expect(Object.keys(d)).toEqual(
        expect.arrayContaining([
          'name',
          'driver',
          'ports',
          'numaNode',
          'uverbs',
          'netdev',
          'mac',
          'smcrCapable',
        ]),
      );
    const text = await runCli(['devices', '--host-root', 'test/fixtures/sysfs/node-a']);
    expect(text.stdout).toMatch(/^erdma_0: driver erdma, mode default, SMC-R capable/);
  });
});

describe('allocation policy', () => {
  const numa: Record<string, number> = {
    'a-0': 0,
    'a-1': 0,
    'b-0': 1,
    'b-1': 1,
    'b-2': 1,
    'c-0': -1,
    // Sorts first by name: its place last must come from its unknown NUMA node alone.
    '0-unknown': -1,
  };
  const of = (id: string): number => numa[id] ?? -1;

  it.each([
    [
      'prefers the NUMA node with the most free IDs',
      ['a-0', 'b-0', 'b-1', 'b-2', 'c-0'],
      [],
      2,
      ['b-0', 'b-1'],
    ],
    [
      'stays on the node of a must-include ID',
      ['a-0', 'a-1', 'b-0', 'b-1'],
      ['a-1'],
      2,
      ['a-1', 'a-0'],
    ],
    [
      'fills from other nodes, unknown NUMA last',
      ['0-unknown', 'a-0', 'c-0', 'b-0'],
      [],
      3,
      ['a-0', 'b-0', '0-unknown'],
    ],
    ['returns must-include alone when it fills the request', ['a-0', 'b-0'], ['b-0'], 1, ['b-0']],
  ])('%s', (_name, available, must, size, expected) => {
    expect(preferredAllocation(available, must, size, of)).toEqual(expected);
  });

  it('advertises each device as shareable slots and grants the devices behind IDs plus rdma_cm', () => {
    const root = tree();
    nodeA(root);
    const devs = discover({ hostRoot: root });
    expect(
      pluginDevices(devs, 3)
        .map((d) => d.id)
        .slice(0, 4),
    ).toEqual(['erdma_0-0', 'erdma_0-1', 'erdma_0-2', 'erdma_2-0']);
    expect(grant(['erdma_0-2'], devs, 'numa')).toEqual({
      envs: { ERDMA_DEVICES: 'erdma_0', ERDMA_PNETIDS: '00163E10F8B0' },
      devices: [
        {
          container_path: '/dev/infiniband/uverbs0',
          host_path: '/dev/infiniband/uverbs0',
          permissions: 'rw',
        },
        {
          container_path: '/dev/infiniband/rdma_cm',
          host_path: '/dev/infiniband/rdma_cm',
          permissions: 'rw',
        },
      ],
    });
    expect(grant(['erdma_0-2'], devs, 'all').envs.ERDMA_DEVICES).toBe('erdma_0,erdma_2,rocep0s6');
  });
});
