import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  compareIds,
  grant,
  idIndex,
  pluginDevices,
  preferredAllocation,
} from '../../../src/agent/deviceplugin/allocation.js';
import { discover, DiscoveryCache, guidToMac } from '../../../src/agent/devices/discovery.js';
import { runCli } from '../../helpers/cli.js';
import { addDevice, nodeA, put } from '../../helpers/sysfs.js';

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

  it('finds with a cache what a scan finds, as netdevs and uverbs devices come, go and change', () => {
    const root = tree();
    nodeA(root);
    const cache = new DiscoveryCache();
    const net = (...p: string[]): string => join(root, 'sys', 'class', 'net', ...p);
    const verbs = (...p: string[]): string => join(root, 'sys', 'class', 'infiniband_verbs', ...p);
    const both = (): ReturnType<typeof discover> => {
      const cached = discover({ hostRoot: root }, cache);
      expect(cached).toEqual(discover({ hostRoot: root }));
      return cached;
    };
    const of = (name: string) => both().find((d) => d.name === name);
    expect(of('erdma_0')).toMatchObject({ netdev: 'eth0', uverbs: '/dev/infiniband/uverbs0' });
    expect(cache.netdevs.get('00:16:3e:10:f8:b0')).toBe('eth0');
    // The ENI's netdev renamed; then its address changed, so nothing carries the MAC.
    renameSync(net('eth0'), net('ens5'));
    expect(of('erdma_0')?.netdev).toBe('ens5');
    put(net('ens5', 'address'), '00:16:3e:99:99:99');
    expect(of('erdma_0')?.netdev).toBe('');
    expect(cache.netdevs.has('00:16:3e:10:f8:b0')).toBe(false);
    // A device without a netdev gains one, in upper case as some drivers write it.
    put(net('eth2', 'address'), '00:16:3E:33:00:02');
    expect(of('erdma_2')?.netdev).toBe('eth2');
    // uverbs devices renumbered after a driver reload.
    put(verbs('uverbs0', 'ibdev'), 'mlx5_0');
    put(verbs('uverbs2', 'ibdev'), 'erdma_0');
    expect(of('erdma_0')?.uverbs).toBe('/dev/infiniband/uverbs2');
    rmSync(verbs('uverbs2'), { recursive: true });
    expect(of('erdma_0')?.uverbs).toBe('');
  });

  it('differs from a scan only where documented: a second netdev with the MAC, an address taken', () => {
    const root = tree();
    nodeA(root);
    const cache = new DiscoveryCache();
    const net = (...p: string[]): string => join(root, 'sys', 'class', 'net', ...p);
    const netdevs = (c?: DiscoveryCache): string[] =>
      discover({ hostRoot: root }, c).map((d) => d.netdev);
    expect(netdevs(cache)).toEqual(['eth0', '', 'eth1']);
    // VLANs on the ENI carry its MAC too: the netdev found first stays while it keeps it.
    for (const vlan of ['a.5', 'eth0.5', 'z.5']) put(net(vlan, 'address'), '00:16:3e:10:f8:b0');
    expect(netdevs(cache)[0]).toBe('eth0');
    // eth1 takes erdma_2's MAC: no netdev was created or renamed, so erdma_2 stays without one
    // until /sys/class/net lists other names, as when the next pod's veth appears.
    put(net('eth1', 'address'), '00:16:3e:33:00:02');
    expect(netdevs()[1]).toBe('eth1');
    expect(netdevs(cache)).toEqual(['eth0', '', '']);
    put(net('veth0a1b2c3d', 'address'), '0a:58:0a:f4:00:07');
    expect(netdevs(cache)).toEqual(['eth0', 'eth1', '']);
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

  it('refuses a host root that does not exist, and --count or --interval without --watch', async () => {
    const gone = await runCli(['devices', '--host-root', '/nonexistent/host']);
    expect(gone).toMatchObject({ code: 2, stdout: '' });
    expect(gone.stderr).toMatch(/--host-root \/nonexistent\/host does not exist/);
    for (const flag of [
      ['--count', '3'],
      ['--interval', '500'],
    ]) {
      const r = await runCli(['devices', '--host-root', 'test/fixtures/sysfs/node-a', ...flag]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--count and --interval go with --watch/);
    }
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
  const known = idIndex(Object.entries(numa));

  it.each([
    [
      'prefers the NUMA node with the most free IDs',
      ['a-0', 'b-0', 'b-1', 'b-2', 'c-0'],
      [],
      1,
      ['b-0'],
    ],
    [
      'N devices: a second device before a second slot of one, even on another NUMA node',
      ['a-0', 'b-0', 'b-1', 'b-2', 'c-0'],
      [],
      2,
      ['b-0', 'a-0'],
    ],
    [
      'N devices: more than the node has free gives further slots of the devices chosen',
      ['a-0', 'a-1', 'b-0', 'b-1'],
      [],
      3,
      ['a-0', 'b-0', 'a-1'],
    ],
    [
      'stays on the node of a must-include ID, with another device',
      ['a-0', 'a-1', 'b-0', 'b-1'],
      ['a-1'],
      2,
      ['a-1', 'b-0'],
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
    expect(preferredAllocation(available, must, size, known)).toEqual(expected);
  });

  it('prefers IDs in device and slot order, digit runs by value, a slot of each device first', () => {
    const ids = ['erdma_10-0', 'erdma_0-10', 'erdma_2-1', 'erdma_0-2', 'erdma_2-0', 'erdma_0-0'];
    const shuffled = idIndex(ids.map((id) => [id, 0] as const));
    expect(preferredAllocation(ids, [], 6, shuffled)).toEqual([
      'erdma_0-0',
      'erdma_2-0',
      'erdma_10-0',
      'erdma_0-2',
      'erdma_0-10',
      'erdma_2-1',
    ]);
    expect(compareIds('hca-007', 'hca-7')).toBeGreaterThan(0);
    expect(compareIds('erdma_0-1', 'erdma_0-1')).toBe(0);
  });

  // The index is built once per device list; a call then sorts on its integers. Its choice must be
  // the policy read directly: the preferred node's IDs, then other known nodes', then unknown, each
  // in compareIds order.
  it('chooses from the index as the policy reads with compareIds, for any IDs and NUMA nodes', () => {
    const id = fc
      .tuple(fc.constantFrom('erdma_', 'hca', 'mlx5_'), fc.nat(12), fc.nat(70))
      .map(([name, n, slot]) => `${name}${n}-${slot}`);
    const advertised = fc.uniqueArray(fc.tuple(id, fc.integer({ min: -1, max: 3 })), {
      selector: ([i]) => i,
      minLength: 1,
      maxLength: 80,
    });
    fc.assert(
      fc.property(advertised, fc.nat(90), fc.nat(3), (devs, size, nMust) => {
        const numaOf = new Map(devs);
        const ids = devs.map(([i]) => i);
        const must = ids.slice(0, Math.min(nMust, size));
        const got = preferredAllocation(ids, must, size, idIndex(devs));
        const node = must.map((i) => numaOf.get(i) ?? -1).find((n) => n >= 0);
        const rest = ids.filter((i) => !must.includes(i));
        const counts = new Map<number, number>();
        for (const i of rest) {
          const n = numaOf.get(i) ?? -1;
          if (n >= 0) counts.set(n, (counts.get(n) ?? 0) + 1);
        }
        const busiest = [...counts].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0];
        const target = node ?? busiest ?? -1;
        const rank = (i: string): number => {
          const n = numaOf.get(i) ?? -1;
          return n === target ? 0 : n < 0 ? 2 : 1;
        };
        // Then one ID of each device not yet taken before a second ID of any (N devices).
        const sorted = rest.sort((a, b) => rank(a) - rank(b) || compareIds(a, b));
        const dev = (i: string): string => i.replace(/-\d+$/, '');
        const firsts = sorted.filter(
          (i, k) =>
            !must.some((m) => dev(m) === dev(i)) &&
            sorted.findIndex((j) => dev(j) === dev(i)) === k,
        );
        const expected = [...must, ...firsts, ...sorted.filter((i) => !firsts.includes(i))].slice(
          0,
          Math.max(size, must.length),
        );
        expect(got).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('puts an ID the index lacks after the known ones, as on an unknown NUMA node', () => {
    const known = idIndex([
      ['erdma_0-0', -1],
      ['erdma_0-1', 0],
    ]);
    expect(preferredAllocation(['stray-0', 'erdma_0-0', 'erdma_0-1'], [], 3, known)).toEqual([
      'erdma_0-1',
      'erdma_0-0',
      'stray-0',
    ]);
  });

  // The order before #43 came from ICU (localeCompare, 'en', numeric). For IDs of the shape the
  // device plugin makes (a device name, `-`, a slot) the comparison must give the same order.
  it('orders IDs of our shape as ICU numeric collation did, and totally', () => {
    const collator = new Intl.Collator('en', { numeric: true });
    const id = fc
      .tuple(
        fc.constantFrom('erdma_', 'mlx5_', 'hca', 'rocep'),
        fc.nat(300),
        fc.constantFrom('', 's6', 'p1'),
        fc.nat(200),
      )
      .map(([name, n, tail, slot]) => `${name}${n}${tail}-${slot}`);
    fc.assert(
      fc.property(id, id, id, (a, b, c) => {
        expect(Math.sign(compareIds(a, b))).toBe(Math.sign(collator.compare(a, b)));
        // `|| 0`: for a === b (fast-check draws equal IDs now and then) -Math.sign(0) is -0,
        // which toBe (Object.is) tells from 0: the test failed about once in a few hundred runs.
        expect(Math.sign(compareIds(a, b))).toBe(-Math.sign(compareIds(b, a)) || 0);
        if (compareIds(a, b) <= 0 && compareIds(b, c) <= 0)
          expect(compareIds(a, c)).toBeLessThanOrEqual(0);
      }),
      { numRuns: 2000 },
    );
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
