// Allocation policy of aliyun/erdma, pure: how devices become kubelet device IDs (with shareable
// slots), which IDs to prefer (distinct devices, then one NUMA node), and what a container gets.
import { containerEdits } from '../devices/container.js';
import type { RdmaDevice } from '../devices/discovery.js';

export type AllocationMode = 'numa' | 'all';

export interface PluginDevice {
  readonly id: string;
  readonly device: RdmaDevice;
}

/** Each device is advertised as `slots` IDs (`erdma_0-0`, `erdma_0-1`, ...), so many pods share it. */
export function pluginDevices(devices: readonly RdmaDevice[], slots: number): PluginDevice[] {
  return devices.flatMap((device) =>
    Array.from({ length: slots }, (_, i) => ({ id: `${device.name}-${i}`, device })),
  );
}

/**
 * A shared resource: `slots` identical IDs (`hca-0`, `hca-1`, ...), each standing for every
 * selected device: healthy while one of them is, on their NUMA node when they share one.
 */
export function sharedDevices(
  devices: readonly RdmaDevice[],
  slots: number,
  prefix: string,
): PluginDevice[] {
  const first = devices[0];
  if (!first) return [];
  const numas = [...new Set(devices.map((d) => d.numaNode))];
  const device: RdmaDevice = {
    ...first,
    name: prefix,
    healthy: devices.some((d) => d.healthy),
    numaNode: numas.length === 1 ? (numas[0] ?? -1) : -1,
  };
  return Array.from({ length: slots }, (_, i) => ({ id: `${prefix}-${i}`, device }));
}

/** The device name behind an ID (`erdma_0-3` → `erdma_0`). */
export function deviceNameOf(id: string): string {
  return id.replace(/-\d+$/, '');
}

/** What the device plugin knows of an ID it advertises. */
export interface IdInfo {
  readonly numaNode: number;
  /** Its place among all the advertised IDs in `compareIds` order. */
  readonly order: number;
}

/**
 * Each advertised ID's NUMA node and place in ID order, built once per device list. The kubelet
 * offers every free ID on each GetPreferredAllocation: ordering them there by `compareIds`, and the
 * two maps of IDs each call built, were about two thirds of what the device plugin allocated per
 * call (a sampling heap profile under the memory bench's load). With the index a call sorts on
 * integers: 16-22% more calls a second there, its peak memory unchanged (#43).
 */
export function idIndex(
  ids: Iterable<readonly [id: string, numaNode: number]>,
): ReadonlyMap<string, IdInfo> {
  const keyed = [...ids].map(([id, numaNode]) => ({ id, numaNode, parts: id.split(DIGIT_RUNS) }));
  keyed.sort((a, b) => compareIdParts(a.parts, b.parts));
  return new Map(keyed.map(({ id, numaNode }, order) => [id, { numaNode, order }]));
}

/**
 * Chooses `size` IDs among `available`, keeping `mustInclude`: `aliyun/erdma: N` is N devices,
 * each shared with other pods (docs/agent.md), as DRA allocates it, so one ID of each device
 * comes before a second ID of any. Within that, one NUMA node is preferred: the node of the
 * must-include IDs, else the node with the most available IDs; unknown NUMA (-1) comes last;
 * then IDs in `known`'s order. An ID `known` lacks counts as on an unknown NUMA node and comes
 * after the known ones (the server refuses such IDs before it asks). Fewer devices free than N:
 * the rest are further slots of the devices chosen (the kubelet counts IDs, not devices).
 */
export function preferredAllocation(
  available: readonly string[],
  mustInclude: readonly string[],
  size: number,
  known: ReadonlyMap<string, IdInfo>,
): string[] {
  const numaOf = (id: string): number => known.get(id)?.numaNode ?? -1;
  const orderOf = (id: string): number => known.get(id)?.order ?? known.size;
  const chosen = [...new Set(mustInclude)].slice(0, Math.max(size, 0));
  if (chosen.length >= size) return chosen;
  const rest = [...new Set(available)].filter((id) => !chosen.includes(id));
  const counts = new Map<number, number>();
  for (const id of rest) counts.set(numaOf(id), (counts.get(numaOf(id)) ?? 0) + 1);
  const mustNodes = chosen.map(numaOf).filter((n) => n >= 0);
  const byCount = [...counts.entries()]
    .filter(([n]) => n >= 0)
    .sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const target = mustNodes[0] ?? byCount[0]?.[0] ?? -1;
  const rank = (id: string): number => {
    const n = numaOf(id);
    if (n === target) return 0;
    return n < 0 ? 2 : 1;
  };
  rest.sort((a, b) => rank(a) - rank(b) || orderOf(a) - orderOf(b));
  return [...chosen, ...distinctDevicesFirst(rest, chosen, size - chosen.length, known)];
}

/**
 * `n` of `ordered`: an ID of each device not in `taken` first, in order, then the others in order
 * (IDs `known` lacks stay among the others: last).
 */
function distinctDevicesFirst(
  ordered: readonly string[],
  taken: readonly string[],
  n: number,
  known: ReadonlyMap<string, IdInfo>,
): string[] {
  const devices = new Set(taken.map(deviceNameOf));
  const first: string[] = [];
  const later: string[] = [];
  for (const id of ordered) {
    const d = deviceNameOf(id);
    if (devices.has(d) || !known.has(id)) later.push(id);
    else {
      devices.add(d);
      first.push(id);
    }
  }
  return [...first, ...later].slice(0, Math.max(n, 0));
}

/** Splits an ID into text and digit runs: `erdma_0-10` → `['erdma_', '0', '-', '10', '']`. */
const DIGIT_RUNS = /(\d+)/;

/**
 * Orders device IDs as they read: digit runs by their value (`erdma_0-2` before `erdma_0-10`,
 * `erdma_2-0` before `erdma_10-0`), the text between them by code unit. This was
 * `localeCompare(b, 'en', { numeric: true })`, which gives IDs of the shape we make the same order
 * but built an ICU collator on every comparison and loaded ICU's locale data into the device
 * plugin on its first GetPreferredAllocation: about 1.2 MB of it at its peak (#43).
 */
export function compareIds(a: string, b: string): number {
  return compareIdParts(a.split(DIGIT_RUNS), b.split(DIGIT_RUNS));
}

function compareIdParts(x: readonly string[], y: readonly string[]): number {
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const p = x[i] ?? '';
    const q = y[i] ?? '';
    if (p === q) continue;
    if (i % 2 === 0) return p < q ? -1 : 1;
    // Digit runs (odd places): by value, however long; then fewer leading zeros first.
    const u = p.replace(/^0+/, '');
    const v = q.replace(/^0+/, '');
    if (u.length !== v.length) return u.length - v.length;
    if (u !== v) return u < v ? -1 : 1;
    return p.length - q.length;
  }
  return x.length - y.length;
}

export interface ContainerGrant {
  readonly envs: Record<string, string>;
  readonly devices: { container_path: string; host_path: string; permissions: string }[];
}

/**
 * Allocate's answer for a container: the devices behind its IDs (or all, in `all` mode) as
 * ../devices/container.ts gives any container its devices. `deviceRoot` prefixes the host side
 * of each device node ('/' on a real node).
 */
export function grant(
  ids: readonly string[],
  all: readonly RdmaDevice[],
  mode: AllocationMode,
  deviceRoot = '/',
): ContainerGrant {
  const names = new Set(ids.map(deviceNameOf));
  const devs = mode === 'all' ? [...all] : all.filter((d) => names.has(d.name));
  const edits = containerEdits(devs, deviceRoot);
  return {
    envs: edits.env,
    devices: edits.deviceNodes.map((n) => ({
      container_path: n.path,
      host_path: n.hostPath,
      permissions: n.permissions,
    })),
  };
}
