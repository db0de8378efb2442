// Fake sysfs trees for discovery tests, laid out as the kernel does under /sys/class.
import { cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface FakeDevice {
  name: string;
  driver?: string;
  vendor?: string;
  guid: string;
  numa?: number;
  ports?: { state: string; linkLayer?: string }[];
  uverbs?: string;
  netdev?: { name: string; mac: string };
}

/** Writes a sysfs attribute file (with its trailing newline), making its directories. */
export function put(path: string, content: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${content}\n`);
}

export function addDevice(root: string, d: FakeDevice): void {
  const dev = join(root, 'sys', 'class', 'infiniband', d.name);
  put(join(dev, 'node_guid'), d.guid);
  put(join(dev, 'device', 'vendor'), d.vendor ?? '0x1ded');
  put(join(dev, 'device', 'numa_node'), String(d.numa ?? -1));
  if (d.driver) {
    const target = join(root, 'sys', 'bus', 'pci', 'drivers', d.driver);
    mkdirSync(target, { recursive: true });
    symlinkSync(`../../../../bus/pci/drivers/${d.driver}`, join(dev, 'device', 'driver'));
  }
  (d.ports ?? [{ state: '4: ACTIVE' }]).forEach((p, i) => {
    put(join(dev, 'ports', String(i + 1), 'state'), p.state);
    put(join(dev, 'ports', String(i + 1), 'link_layer'), p.linkLayer ?? 'Ethernet');
  });
  if (d.uverbs) put(join(root, 'sys', 'class', 'infiniband_verbs', d.uverbs, 'ibdev'), d.name);
  if (d.netdev) put(join(root, 'sys', 'class', 'net', d.netdev.name, 'address'), d.netdev.mac);
}

export function setPortState(root: string, name: string, port: number, state: string): void {
  put(join(root, 'sys', 'class', 'infiniband', name, 'ports', String(port), 'state'), state);
}

export function removeDevice(root: string, name: string): void {
  rmSync(join(root, 'sys', 'class', 'infiniband', name), { recursive: true, force: true });
}

/**
 * A node's host tree as the agent sees it, under `root`: the shipped node-a tree (its eRDMA devices
 * and their ENIs), the CNI directories, and a primary CNI's conflist (a bridge). Returns `root`.
 */
export function fixtureHost(root: string): string {
  cpSync('test/fixtures/sysfs/node-a', root, { recursive: true });
  mkdirSync(join(root, 'etc/cni/net.d'), { recursive: true });
  mkdirSync(join(root, 'opt/cni/bin'), { recursive: true });
  writeFileSync(
    join(root, 'etc/cni/net.d/10-bridge.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s',
      plugins: [{ type: 'bridge', bridge: 'cni0' }],
    }),
  );
  return root;
}

/** The tree shipped in test/fixtures/sysfs/node-a (regenerate with `npx tsx test/helpers/sysfs.ts`). */
export function nodeA(root: string): void {
  addDevice(root, {
    name: 'erdma_0',
    driver: 'erdma',
    guid: '0216:3eff:fe10:f8b0',
    numa: 0,
    uverbs: 'uverbs0',
    netdev: { name: 'eth0', mac: '00:16:3e:10:f8:b0' },
  });
  addDevice(root, {
    name: 'rocep0s6',
    guid: '0216:3eff:fe22:0001',
    numa: 1,
    uverbs: 'uverbs1',
    ports: [{ state: '1: DOWN' }],
    netdev: { name: 'eth1', mac: '00:16:3e:22:00:01' },
  });
  addDevice(root, { name: 'erdma_2', driver: 'erdma', guid: '0216:3eff:fe33:0002', numa: -1 });
  addDevice(root, {
    name: 'mlx5_0',
    driver: 'mlx5_core',
    vendor: '0x15b3',
    guid: 'b859:9f03:00a1:2b3c',
    numa: 0,
    uverbs: 'uverbs2',
  });
}

if (process.argv[1]?.endsWith('sysfs.ts')) {
  const root = 'test/fixtures/sysfs/node-a';
  rmSync(root, { recursive: true, force: true });
  nodeA(root);
}
