// The node's eRDMA devices as a DRA ResourceSlice (resource.k8s.io/v1): one slice, one pool named
// after the node, written by this node's DRA driver only. Each device carries what decides SMC-R
// for a pod that gets it: the device's own facts from sysfs (driver mode, port state, NUMA node,
// PCI address, the ENI's MAC and PNETID) and the node's, from the labels the agent keeps on its
// Node (the SMC mechanism, loopback-ism, reserved port ranges) and the Node's kernel version. A
// CEL selector of a claim or a DeviceClass reads them as
// `device.attributes["erdma.smcr.erdma.io"].smcMechanism`. Pure: ./publisher.ts writes it.
import { NODE_LABELS } from '../constants.js';
import type { RdmaDevice } from '../devices/discovery.js';
import { DRA_DRIVER } from './claim.js';

/** The capacity each pod's allocation takes one of: as many pods share a device as it has slots. */
export const SLOTS_CAPACITY = 'slots';

/** The taint a device whose port is down carries: not allocated to new claims (NoSchedule). */
export const PORT_DOWN_TAINT = `${DRA_DRIVER}/port-down`;

/** A DRA attribute value: exactly one of these (resource.k8s.io/v1 DeviceAttribute). */
export type Attribute =
  | { readonly string: string }
  | { readonly int: number }
  | { readonly bool: boolean }
  | { readonly version: string };

export interface SliceDevice {
  readonly name: string;
  readonly attributes: Readonly<Record<string, Attribute>>;
  readonly capacity?: Readonly<Record<string, { readonly value: string; requestPolicy?: object }>>;
  readonly allowMultipleAllocations?: boolean;
  readonly taints?: readonly { key: string; value?: string; effect: 'NoSchedule' }[];
}

export interface SliceSpec {
  readonly driver: string;
  readonly nodeName: string;
  readonly pool: {
    readonly name: string;
    readonly generation: number;
    readonly resourceSliceCount: 1;
  };
  readonly devices: readonly SliceDevice[];
}

/** What the slice needs of the Node: its name and UID (owner), labels and kernel. */
export interface NodeInfo {
  readonly name: string;
  readonly uid: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly kernelVersion: string;
}

export interface SliceOptions {
  /** Pods that may share one device (agent.slotsPerDevice): the device's slots capacity. */
  readonly slots: number;
}

/** A device name as the API takes it (a DNS label): erdma_0 → erdma-0. */
export function deviceName(rdma: string): string {
  const n = rdma
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+|-+$/g, '');
  return (n || 'device').slice(0, 63);
}

/** The slice's name: one per node and driver, so that two writers would meet on one object. */
export const sliceName = (node: string): string => `${node}-${DRA_DRIVER}`.slice(0, 253);

/**
 * The kernel's release as a semantic version, where it starts as one: "5.10.134-17.3.al8.x86_64"
 * → "5.10.134" (a claim compares it with semver(), as the policy's kernel rule does).
 */
export function kernelSemver(release: string): string | undefined {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(release);
  return m ? `${Number(m[1])}.${Number(m[2])}.${Number(m[3] ?? 0)}` : undefined;
}

/** The node's SMC mechanism as the agent labelled it ('none' before it did, or unknown). */
export function nodeMechanism(node: NodeInfo | undefined): string {
  return node?.labels[NODE_LABELS.mechanism] ?? 'none';
}

/** The node's facts every device shares, from the agent's labels and the Node's status. */
function nodeAttributes(node: NodeInfo): Record<string, Attribute> {
  const l = node.labels;
  const out: Record<string, Attribute> = {};
  out.smcMechanism = { string: nodeMechanism(node) };
  if (l[NODE_LABELS.smcdLoopback] !== undefined)
    out.smcdLoopback = { bool: l[NODE_LABELS.smcdLoopback] === 'true' };
  const version = kernelSemver(node.kernelVersion);
  if (version) out.kernelVersion = { version };
  if (node.kernelVersion) out.kernelRelease = { string: node.kernelVersion.slice(0, 64) };
  for (const [key, label] of [
    ['erdmaReservedPorts', NODE_LABELS.erdmaReservedPorts],
    ['smcReservedPorts', NODE_LABELS.smcReservedPorts],
  ] as const)
    if (l[label]) out[key] = { string: l[label] };
  return out;
}

/** One device of the slice. */
function sliceDevice(d: RdmaDevice, node: NodeInfo, o: SliceOptions): SliceDevice {
  const port = d.ports[0];
  const nodeCapable = node.labels[NODE_LABELS.capable] === 'true';
  const attributes: Record<string, Attribute> = {
    rdmaDevice: { string: d.name },
    driverMode: { string: d.driverMode },
    portState: { string: port?.state || 'UNKNOWN' },
    // The device can carry SMC-R for a pod: its driver mode and port, and the node's kernel and
    // mechanism as the agent judged them (smcr.erdma.io/capable).
    smcrCapable: { bool: d.smcrCapable && nodeCapable },
    ...(d.netdev ? { netdev: { string: d.netdev } } : {}),
    ...(d.mac ? { mac: { string: d.mac } } : {}),
    ...(d.pnetId ? { pnetId: { string: d.pnetId } } : {}),
    ...(d.numaNode >= 0
      ? {
          numaNode: { int: d.numaNode },
          'resource.kubernetes.io/numaNode': { int: d.numaNode },
        }
      : {}),
    ...(d.pciAddress ? { pciAddress: { string: d.pciAddress } } : {}),
    ...(d.pcieRoot ? { 'resource.kubernetes.io/pcieRoot': { string: d.pcieRoot } } : {}),
    ...nodeAttributes(node),
  };
  return {
    name: deviceName(d.name),
    attributes,
    // Shared as the device plugin shares it: each allocation takes one slot (#86 item 2).
    allowMultipleAllocations: true,
    capacity: {
      [SLOTS_CAPACITY]: {
        value: String(o.slots),
        requestPolicy: { default: '1', validRange: { min: '1', max: '1' } },
      },
    },
    ...(d.healthy
      ? {}
      : {
          taints: [
            {
              key: PORT_DOWN_TAINT,
              value: (port?.state || 'UNKNOWN').slice(0, 63),
              effect: 'NoSchedule',
            },
          ],
        }),
  };
}

/** The slice's spec for the node's devices now, at the given pool generation. */
export function sliceSpec(
  node: NodeInfo,
  devices: readonly RdmaDevice[],
  o: SliceOptions,
  generation: number,
): SliceSpec {
  return {
    driver: DRA_DRIVER,
    nodeName: node.name,
    pool: { name: node.name, generation, resourceSliceCount: 1 },
    devices: devices.map((d) => sliceDevice(d, node, o)),
  };
}

/** The whole object, owned by the Node (deleted with it). */
export function resourceSlice(node: NodeInfo, spec: SliceSpec): Record<string, unknown> {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      name: sliceName(node.name),
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid }],
    },
    spec,
  };
}
