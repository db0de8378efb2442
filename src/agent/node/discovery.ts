// eRDMA device discovery from sysfs under a configurable host root. A device is eRDMA when its
// driver is `erdma` or its PCI vendor is 0x1ded, whatever its name (erdma_N, or rocepXsY in compat
// mode). Nothing here writes; every path hangs off hostRoot so tests use fake trees.
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { DriverMode } from '../../policy/types.js';

export const ERDMA_DRIVER = 'erdma';
export const ERDMA_VENDOR = '0x1ded';

export interface PortInfo {
  readonly port: number;
  /** e.g. "ACTIVE", "DOWN" (from "4: ACTIVE"). */
  readonly state: string;
  readonly linkLayer: string;
  readonly healthy: boolean;
}

export interface RdmaDevice {
  readonly name: string;
  readonly driver: string;
  readonly vendor: string;
  /** PCI device ID (sysfs device/device), '' when unknown. */
  readonly pciDevice: string;
  readonly nodeGuid: string;
  readonly ports: readonly PortInfo[];
  /** NUMA node, or -1 when unknown. */
  readonly numaNode: number;
  /** /dev/infiniband/uverbsN, or '' when the device has no verbs device. */
  readonly uverbs: string;
  readonly netdev: string;
  readonly mac: string;
  readonly pnetId: string;
  readonly driverMode: DriverMode;
  readonly smcrCapable: boolean;
  readonly healthy: boolean;
}

export interface DiscoveryOptions {
  readonly hostRoot: string;
  /** default | compat | ofed, or auto: compat when the device is named roce*, else default. */
  readonly driverMode?: DriverMode | 'auto';
  /** Accept other RDMA drivers too (e.g. rxe for tests); eRDMA only by default. */
  readonly extraDrivers?: readonly string[];
  /** Every RDMA device whatever its driver (for the device plugin's resource selectors). */
  readonly anyDriver?: boolean;
}

/** A sysfs (or /proc) file's text, trimmed; '' when it cannot be read. */
export function read(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

function driverOf(devDir: string): string {
  try {
    return basename(readlinkSync(join(devDir, 'device', 'driver')));
  } catch {
    return '';
  }
}

function ports(devDir: string): PortInfo[] {
  const dir = join(devDir, 'ports');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .sort((a, b) => a - b)
    .map((port) => {
      const raw = read(join(dir, String(port), 'state'));
      const state = raw.includes(':') ? (raw.split(':')[1] ?? '').trim() : raw;
      return {
        port,
        state,
        linkLayer: read(join(dir, String(port), 'link_layer')),
        healthy: state === 'ACTIVE',
      };
    });
}

function uverbsOf(root: string, name: string): string {
  const dir = join(root, 'sys', 'class', 'infiniband_verbs');
  if (!existsSync(dir)) return '';
  const match = readdirSync(dir).find((u) => read(join(dir, u, 'ibdev')) === name);
  return match ? `/dev/infiniband/${match}` : '';
}

/** Node GUID in EUI-64 form → MAC: drop the ff:fe in the middle and flip the universal/local bit. */
export function guidToMac(guid: string): string {
  const hex = guid.replace(/:/g, '').toLowerCase();
  if (!/^[0-9a-f]{16}$/.test(hex) || hex.slice(6, 10) !== 'fffe') return '';
  const bytes = [
    hex.slice(0, 2),
    hex.slice(2, 4),
    hex.slice(4, 6),
    hex.slice(10, 12),
    hex.slice(12, 14),
    hex.slice(14, 16),
  ];
  bytes[0] = (Number.parseInt(bytes[0] ?? '0', 16) ^ 0x02).toString(16).padStart(2, '0');
  return bytes.join(':');
}

/** The PNETID the platform uses: the ENI MAC, upper-case, without colons. */
export function pnetIdOf(mac: string): string {
  return mac.replace(/:/g, '').toUpperCase();
}

function netdevByMac(root: string, mac: string): string {
  const dir = join(root, 'sys', 'class', 'net');
  if (!mac || !existsSync(dir)) return '';
  return readdirSync(dir).find((n) => read(join(dir, n, 'address')).toLowerCase() === mac) ?? '';
}

function modeOf(name: string, opt: DiscoveryOptions['driverMode']): DriverMode {
  if (opt && opt !== 'auto') return opt;
  return name.startsWith('roce') ? 'compat' : 'default';
}

function deviceAt(opts: DiscoveryOptions, name: string): RdmaDevice | undefined {
  const devDir = join(opts.hostRoot, 'sys', 'class', 'infiniband', name);
  const driver = driverOf(devDir);
  const vendor = read(join(devDir, 'device', 'vendor')).toLowerCase();
  const isErdma = driver === ERDMA_DRIVER || vendor === ERDMA_VENDOR;
  if (!isErdma && !opts.anyDriver && !(opts.extraDrivers ?? []).includes(driver)) return undefined;
  const nodeGuid = read(join(devDir, 'node_guid'));
  const numaRaw = Number.parseInt(read(join(devDir, 'device', 'numa_node')) || '-1', 10);
  const mac = guidToMac(nodeGuid);
  const p = ports(devDir);
  const healthy = p.some((x) => x.healthy);
  const driverMode = modeOf(name, opts.driverMode);
  return {
    name,
    driver: driver || (isErdma ? ERDMA_DRIVER : ''),
    vendor,
    pciDevice: read(join(devDir, 'device', 'device')).toLowerCase(),
    nodeGuid,
    ports: p,
    numaNode: Number.isNaN(numaRaw) || numaRaw < 0 ? -1 : numaRaw,
    uverbs: uverbsOf(opts.hostRoot, name),
    netdev: netdevByMac(opts.hostRoot, mac),
    mac,
    pnetId: mac ? pnetIdOf(mac) : '',
    driverMode,
    smcrCapable: driverMode === 'default' && healthy,
    healthy,
  };
}

/** Every eRDMA device (plus configured extra drivers) under hostRoot, sorted by name. */
export function discover(opts: DiscoveryOptions): RdmaDevice[] {
  const dir = join(opts.hostRoot, 'sys', 'class', 'infiniband');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .map((name) => deviceAt(opts, name))
    .filter((d): d is RdmaDevice => d !== undefined);
}

/** A short ibv_devinfo-like text. */
export function formatDevices(devices: readonly RdmaDevice[]): string {
  if (devices.length === 0) return 'no eRDMA devices found\n';
  return devices
    .map((d) =>
      [
        `${d.name}: driver ${d.driver || '?'}, mode ${d.driverMode}, ${d.smcrCapable ? 'SMC-R capable' : 'not SMC-R capable'}`,
        `  node_guid ${d.nodeGuid || '?'}  netdev ${d.netdev || '?'}  mac ${d.mac || '?'}  pnetid ${d.pnetId || '?'}`,
        `  numa ${d.numaNode}  uverbs ${d.uverbs || 'none'}`,
        ...d.ports.map((p) => `  port ${p.port}: ${p.state || '?'} (${p.linkLayer || '?'})`),
      ].join('\n'),
    )
    .join('\n')
    .concat('\n');
}

/** Discovery options from the agent configuration. */
export function discoveryOptions(a: {
  readonly hostRoot: string;
  readonly driverMode: DiscoveryOptions['driverMode'];
  readonly extraDrivers: readonly string[];
}): DiscoveryOptions {
  return { hostRoot: a.hostRoot, driverMode: a.driverMode, extraDrivers: a.extraDrivers };
}
