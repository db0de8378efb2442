import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { discover, DiscoveryCache, guidToMac } from '../../../src/devices/discovery.js';
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
