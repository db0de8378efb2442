// Who else serves our resource on this node. The kubelet keeps the newest registration of a
// resource name and records the devices it got in its device manager's checkpoint
// (<kubelet dir>/device-plugins/kubelet_internal_checkpoint, pkg/kubelet/cm/devicemanager/checkpoint:
// {"Data": {"PodDeviceEntries": [...], "RegisteredDevices": {resource: [device ID...]}}, "Checksum": n}).
// A resource recorded there with IDs we never advertise belongs to another device plugin (ACK's
// eRDMA controller serves aliyun/erdma too): live, or stopped less than the kubelet's grace period
// (5 minutes) ago, after which the kubelet drops it from the checkpoint.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const KUBELET_CHECKPOINT = 'kubelet_internal_checkpoint';

/** The device IDs the kubelet's checkpoint records for `resource` (undefined: none, or no checkpoint). */
export function registeredIds(deviceDir: string, resource: string): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(join(deviceDir, KUBELET_CHECKPOINT), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const doc = JSON.parse(text) as { Data?: { RegisteredDevices?: Record<string, unknown> } };
    const ids = doc.Data?.RegisteredDevices?.[resource];
    return Array.isArray(ids) ? ids.filter((i): i is string => typeof i === 'string') : undefined;
  } catch {
    // Mid-write or not the kubelet's format: no verdict from it this time.
    return undefined;
  }
}

/**
 * The IDs recorded for `resource` that are not ours (`ours` says which are), or undefined when
 * there is none: nobody else registered it, or what is recorded is ours.
 */
export function otherRegistrant(
  deviceDir: string,
  resource: string,
  ours: (id: string) => boolean,
): string[] | undefined {
  const others = (registeredIds(deviceDir, resource) ?? []).filter((id) => !ours(id));
  return others.length > 0 ? others : undefined;
}
