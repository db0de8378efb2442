// Who else serves our resource on this node. The kubelet keeps the newest registration of a
// resource name and records the devices it got in its device manager's checkpoint
// (<kubelet dir>/device-plugins/kubelet_internal_checkpoint, pkg/kubelet/cm/devicemanager/checkpoint:
// {"Data": {"PodDeviceEntries": [...], "RegisteredDevices": {resource: [device ID...]}}, "Checksum": n}).
// A resource recorded there with IDs we never advertise belongs to another device plugin (ACK's
// eRDMA controller serves aliyun/erdma too): live, or stopped less than the kubelet's grace period
// (5 minutes) ago, after which the kubelet drops it from the checkpoint.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const KUBELET_CHECKPOINT = 'kubelet_internal_checkpoint';

type Registered = Record<string, unknown>;

/**
 * The last checkpoint parsed, by path: the device plugin asks every poll (1 s), and the file,
 * which lists every pod's devices, changes only when the kubelet writes it (a new file renamed
 * over the old, pkg/kubelet/util/store/filestore.go writeFile: a new inode). Same inode, size and
 * mtime: the same content.
 */
const parsed = new Map<string, { stamp: string; registered: Registered | undefined }>();

function registered(path: string): Registered | undefined {
  let stamp: string;
  try {
    const st = statSync(path, { bigint: true });
    stamp = `${st.ino}:${st.size}:${st.mtimeNs}`;
  } catch {
    parsed.delete(path);
    return undefined;
  }
  const hit = parsed.get(path);
  if (hit?.stamp === stamp) return hit.registered;
  let doc: { Data?: { RegisteredDevices?: Registered } };
  try {
    doc = JSON.parse(readFileSync(path, 'utf8')) as typeof doc;
  } catch {
    // Gone, mid-write or not the kubelet's format: no verdict from it this time, and no memory of it.
    parsed.delete(path);
    return undefined;
  }
  const reg = doc?.Data?.RegisteredDevices;
  parsed.set(path, { stamp, registered: reg });
  return reg;
}

/** The device IDs the kubelet's checkpoint records for `resource` (undefined: none, or no checkpoint). */
export function registeredIds(deviceDir: string, resource: string): string[] | undefined {
  const ids = registered(join(deviceDir, KUBELET_CHECKPOINT))?.[resource];
  return Array.isArray(ids) ? ids.filter((i): i is string => typeof i === 'string') : undefined;
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
