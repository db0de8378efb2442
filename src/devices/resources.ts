// The resources the device plugin serves (agent.resources): each a name, a device selector and a
// sharing mode. Absent, the one resource of before: agent.resourceName over the node's eRDMA
// devices. Checked at start: a configured selector that matches nothing (unless the resource is
// optional: then it is served with no devices until one appears), two exclusive resources
// claiming one device, or two resources with one name or socket refuse to start, with what the
// node has.
import { AppError } from '../errors.js';
import type { AgentConfig, ResourceSpec } from '../config/schema.js';
import { discover, DiscoveryCache, type RdmaDevice } from './discovery.js';

export interface ServedResource {
  readonly name: string;
  readonly mode: 'exclusive' | 'shared';
  readonly slots: number;
  readonly allocation: 'numa' | 'all';
  readonly socketName: string;
  /** The resource's devices now (rescanned by the plugin). */
  readonly discover: () => RdmaDevice[];
}

export const DEFAULT_SHARED_SLOTS = 1000;

/** Whether a device matches every field the selector gives. */
export function matches(d: RdmaDevice, sel: ResourceSpec['selector']): boolean {
  if (sel.drivers && !sel.drivers.includes(d.driver)) return false;
  if (sel.vendors && !sel.vendors.map((v) => v.toLowerCase()).includes(d.vendor)) return false;
  if (sel.deviceIds && !sel.deviceIds.map((v) => v.toLowerCase()).includes(d.pciDevice))
    return false;
  if (sel.rdmaDevice && !new RegExp(sel.rdmaDevice).test(d.name)) return false;
  if (sel.netdev && !new RegExp(sel.netdev).test(d.netdev)) return false;
  return true;
}

/** A socket name for a resource: the configured one, or erdma-smcr-<name>.sock. */
function socketFor(spec: ResourceSpec): string {
  return spec.socketName ?? `erdma-smcr-${spec.name.replace(/[^A-Za-z0-9._-]/g, '-')}.sock`;
}

function describeNode(all: readonly RdmaDevice[]): string {
  if (all.length === 0) return 'this node has no RDMA devices';
  return `this node has ${all.map((d) => `${d.name} (driver ${d.driver || '?'}, vendor ${d.vendor || '?'}${d.netdev ? `, netdev ${d.netdev}` : ''})`).join(', ')}`;
}

/** The resources to serve, checked against the node's devices now. */
export function servedResources(
  a: AgentConfig,
  defaultDiscover: () => RdmaDevice[],
): ServedResource[] {
  if (!a.resources) {
    return [
      {
        name: a.resourceName,
        mode: 'exclusive',
        slots: a.slotsPerDevice,
        allocation: a.allocation,
        socketName: a.socketName,
        discover: defaultDiscover,
      },
    ];
  }
  const cache = new DiscoveryCache();
  const all = (): RdmaDevice[] =>
    discover({ hostRoot: a.hostRoot, driverMode: a.driverMode, anyDriver: true }, cache);
  const now = all();
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const claimed = new Map<string, string>();
  const served = a.resources.map((spec) => {
    const socketName = socketFor(spec);
    for (const [key, what] of [
      [spec.name, 'name'],
      [socketName, 'socket'],
    ] as const) {
      if (seen.has(`${what}:${key}`)) problems.push(`two resources have the ${what} ${key}`);
      seen.set(`${what}:${key}`, spec.name);
    }
    const mine = now.filter((d) => matches(d, spec.selector));
    if (mine.length === 0 && !spec.optional)
      problems.push(
        `resource ${spec.name}: its selector ${JSON.stringify(spec.selector)} matches no RDMA device (${describeNode(now)})`,
      );
    if (spec.mode === 'exclusive') {
      for (const d of mine) {
        const other = claimed.get(d.name);
        if (other)
          problems.push(
            `resources ${other} and ${spec.name} both claim ${d.name} exclusively; make one of them shared or narrow a selector`,
          );
        else claimed.set(d.name, spec.name);
      }
    }
    return {
      name: spec.name,
      mode: spec.mode,
      slots: spec.slots ?? (spec.mode === 'shared' ? DEFAULT_SHARED_SLOTS : a.slotsPerDevice),
      allocation: spec.allocation,
      socketName,
      discover: () => all().filter((d) => matches(d, spec.selector)),
    };
  });
  if (problems.length > 0)
    throw new AppError('CONFIG_INVALID', `agent.resources: ${problems.join('; ')}`);
  return served;
}
