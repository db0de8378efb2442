// eRDMA device discovery from sysfs under a configurable host root. A device is eRDMA when its
// driver is `erdma` or its PCI vendor is 0x1ded, whatever its name (erdma_N, or rocepXsY in compat
// mode). Nothing here writes; every path hangs off hostRoot so tests use fake trees.
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { DriverMode } from '../policy/types.js';

/** /sys/class/CLASS[/...]: `infiniband`, `infiniband_verbs`, `net`. */
export const sysClass = (hostRoot: string, cls: string, ...rest: string[]): string =>
  join(hostRoot, 'sys', 'class', cls, ...rest);

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
  /** The PCI function (0000:00:05.0) and its PCIe root complex (pci0000:00), where sysfs links them. */
  readonly pciAddress?: string;
  readonly pcieRoot?: string;
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
    return basename(readlinkSync(`${devDir}/device/driver`));
  } catch {
    return '';
  }
}

// Paths below a device's directory are built by concatenation: the names come from readdir, and
// the device plugin runs this every second, where path.join was a third of its JavaScript (#43).
function ports(devDir: string): PortInfo[] {
  const dir = `${devDir}/ports`;
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .sort((a, b) => a - b)
    .map((port) => {
      const raw = read(`${dir}/${port}/state`);
      const state = raw.includes(':') ? (raw.split(':')[1] ?? '').trim() : raw;
      return {
        port,
        state,
        linkLayer: read(`${dir}/${port}/link_layer`),
        healthy: state === 'ACTIVE',
      };
    });
}

/**
 * What a repeated discovery can reuse: which netdev carries a MAC and which uverbs device serves
 * an RDMA device. Finding them reads every entry of /sys/class/net (one per pod's veth on a busy
 * node) and of /sys/class/infiniband_verbs, for each device; the device plugin discovers every
 * second (#43: idle CPU). A remembered answer is checked with one read each time it is used and a
 * failed check scans again, so the answer is what a scan finds. Two differences, both documented
 * in docs/agent.md: where two netdevs carry one MAC (a VLAN on the ENI), the one found first stays
 * while it keeps the MAC; and a MAC no netdev carried is looked for again when /sys/class/net
 * lists other names (a netdev created, removed or renamed), not when an address changes.
 */
export class DiscoveryCache {
  readonly netdevs = new Map<string, string>();
  /** MAC → the names /sys/class/net listed when no netdev carried it. */
  readonly missing = new Map<string, string>();
  readonly uverbs = new Map<string, string>();
}

function uverbsOf(root: string, name: string, cache: DiscoveryCache | undefined): string {
  const dir = sysClass(root, 'infiniband_verbs');
  const known = cache?.uverbs.get(name);
  if (known !== undefined && read(`${dir}/${known}/ibdev`) === name)
    return `/dev/infiniband/${known}`;
  if (!existsSync(dir)) return '';
  const match = readdirSync(dir).find((u) => read(`${dir}/${u}/ibdev`) === name);
  if (match) cache?.uverbs.set(name, match);
  else cache?.uverbs.delete(name);
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

function netdevByMac(root: string, mac: string, cache: DiscoveryCache | undefined): string {
  const dir = sysClass(root, 'net');
  if (!mac) return '';
  const known = cache?.netdevs.get(mac);
  if (known !== undefined && read(`${dir}/${known}/address`).toLowerCase() === mac) return known;
  if (!existsSync(dir)) return '';
  const names = readdirSync(dir);
  const listed = cache ? names.join('/') : '';
  if (cache?.missing.get(mac) === listed) return '';
  const match = names.find((n) => read(`${dir}/${n}/address`).toLowerCase() === mac);
  if (match) {
    cache?.netdevs.set(mac, match);
    cache?.missing.delete(mac);
  } else {
    cache?.netdevs.delete(mac);
    cache?.missing.set(mac, listed);
  }
  return match ?? '';
}

const PCI_ADDRESS = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;
const PCIE_ROOT = /^pci[0-9a-f]{4}:[0-9a-f]{2}$/;

/** The device's PCI function and root complex from its sysfs `device` link, where it is one. */
function pciOf(devDir: string): { pciAddress?: string; pcieRoot?: string } {
  try {
    const parts = realpathSync(`${devDir}/device`).split('/');
    const address = parts.at(-1) ?? '';
    if (!PCI_ADDRESS.test(address)) return {};
    const root = parts.find((x) => PCIE_ROOT.test(x));
    return { pciAddress: address, ...(root ? { pcieRoot: root } : {}) };
  } catch {
    return {};
  }
}

function modeOf(name: string, opt: DiscoveryOptions['driverMode']): DriverMode {
  if (opt && opt !== 'auto') return opt;
  return name.startsWith('roce') ? 'compat' : 'default';
}

function deviceAt(
  opts: DiscoveryOptions,
  dir: string,
  name: string,
  cache: DiscoveryCache | undefined,
): RdmaDevice | undefined {
  const devDir = `${dir}/${name}`;
  const driver = driverOf(devDir);
  const vendor = read(`${devDir}/device/vendor`).toLowerCase();
  const isErdma = driver === ERDMA_DRIVER || vendor === ERDMA_VENDOR;
  if (!isErdma && !opts.anyDriver && !(opts.extraDrivers ?? []).includes(driver)) return undefined;
  const nodeGuid = read(`${devDir}/node_guid`);
  const numaRaw = Number.parseInt(read(`${devDir}/device/numa_node`) || '-1', 10);
  const mac = guidToMac(nodeGuid);
  const p = ports(devDir);
  const healthy = p.some((x) => x.healthy);
  const driverMode = modeOf(name, opts.driverMode);
  return {
    name,
    driver: driver || (isErdma ? ERDMA_DRIVER : ''),
    vendor,
    pciDevice: read(`${devDir}/device/device`).toLowerCase(),
    nodeGuid,
    ports: p,
    numaNode: Number.isNaN(numaRaw) || numaRaw < 0 ? -1 : numaRaw,
    uverbs: uverbsOf(opts.hostRoot, name, cache),
    netdev: netdevByMac(opts.hostRoot, mac, cache),
    mac,
    pnetId: mac ? pnetIdOf(mac) : '',
    driverMode,
    smcrCapable: driverMode === 'default' && healthy,
    healthy,
    ...pciOf(devDir),
  };
}

/**
 * Every eRDMA device (plus configured extra drivers) under hostRoot, sorted by name. A caller that
 * discovers again and again passes the same `cache` to each call.
 */
export function discover(opts: DiscoveryOptions, cache?: DiscoveryCache): RdmaDevice[] {
  const dir = sysClass(opts.hostRoot, 'infiniband');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .map((name) => deviceAt(opts, dir, name, cache))
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
