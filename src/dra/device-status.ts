// What a ResourceClaim says of each device it got (status.devices, ResourceClaimDeviceStatus:
// GA in 1.37): written by the driver that prepared it, so that an admin reads which eRDMA device
// a pod holds, its PNETID, its port and the node's SMC mechanism with `kubectl get resourceclaim`,
// without exec or the node's files. One entry per device (the list is keyed by driver, pool and
// device): a Ready condition that follows the port, our facts as `data`, and the ENI the device
// sits on as `networkData` (its netdev and MAC; no IPs: the pod's addresses are its own, not the
// device's). Written by server-side apply under the driver's name as field manager, on the
// status subresource, when a claim is prepared and again when a device's port changes. The API
// server asks, beside RBAC on resourceclaims/status, for `associated-node:patch` on
// resourceclaims/driver named after the driver (the DaemonSet's token names its node).
import type { KubeClient } from '../cluster/client.js';
import type { RdmaDevice } from '../devices/discovery.js';
import { claimPath } from './claims.js';
import type { PreparedClaim } from './claim.js';
import { DRA_DRIVER } from './claim.js';

export interface DeviceCondition {
  readonly type: 'Ready';
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
}

export interface AllocatedDeviceStatus {
  readonly driver: string;
  readonly pool: string;
  readonly device: string;
  readonly shareID?: string;
  readonly conditions: readonly DeviceCondition[];
  readonly data: Readonly<Record<string, string | number | boolean>>;
  readonly networkData?: { readonly interfaceName?: string; readonly hardwareAddress?: string };
}

/** The port state as the status says it: the device's first port, UNKNOWN when it has none. */
const portState = (d: RdmaDevice | undefined): string => d?.ports[0]?.state || 'UNKNOWN';

/**
 * The claim's status.devices as this driver sees its devices now (`devices`: the node's, by RDMA
 * name), the SMC mechanism the node's label says, at `now`. A device gone from the node is said
 * so (Ready Unknown) rather than left as it was.
 */
export function deviceStatuses(
  claim: PreparedClaim,
  devices: ReadonlyMap<string, RdmaDevice>,
  mechanism: string,
  now: Date,
): AllocatedDeviceStatus[] {
  return claim.devices.map((p) => {
    const d = devices.get(p.rdmaDevice);
    const state = portState(d);
    const ready: DeviceCondition = !d
      ? {
          type: 'Ready',
          status: 'Unknown',
          reason: 'DeviceGone',
          message: `${p.rdmaDevice} is no longer on the node`,
          lastTransitionTime: now.toISOString(),
        }
      : {
          type: 'Ready',
          status: d.healthy ? 'True' : 'False',
          reason: d.healthy ? 'PortActive' : 'PortNotActive',
          message: `${p.rdmaDevice} port 1 is ${state}`,
          lastTransitionTime: now.toISOString(),
        };
    return {
      driver: DRA_DRIVER,
      pool: p.poolName,
      device: p.deviceName,
      ...(p.shareId ? { shareID: p.shareId } : {}),
      conditions: [ready],
      data: {
        rdmaDevice: p.rdmaDevice,
        ...(p.pnetId ? { pnetId: p.pnetId } : {}),
        portState: state,
        smcMechanism: mechanism,
        ...(d?.driverMode ? { driverMode: d.driverMode } : {}),
        ...(p.uverbs ? { uverbs: p.uverbs } : {}),
      },
      ...(d?.netdev || d?.mac
        ? {
            networkData: {
              ...(d.netdev ? { interfaceName: d.netdev } : {}),
              ...(d.mac ? { hardwareAddress: d.mac } : {}),
            },
          }
        : {}),
    };
  });
}

/** What decides a rewrite: everything but the time. */
export function statusKey(s: readonly AllocatedDeviceStatus[]): string {
  return JSON.stringify(
    s.map(({ conditions, ...rest }) => ({
      ...rest,
      conditions: conditions.map(({ lastTransitionTime: _t, ...c }) => c),
    })),
  );
}

/** Applies the claim's device statuses (server-side apply, our field manager, the status subresource). */
export async function applyDeviceStatuses(
  client: KubeClient,
  claim: PreparedClaim,
  statuses: readonly AllocatedDeviceStatus[],
): Promise<void> {
  await client.request('PATCH', `${claimPath(claim.namespace, claim.name)}/status`, {
    query: { fieldManager: DRA_DRIVER, force: 'true' },
    contentType: 'application/apply-patch+yaml',
    body: {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name: claim.name, namespace: claim.namespace, uid: claim.uid },
      status: { devices: statuses },
    },
  });
}
