// The CDI spec of a prepared claim (the CDI specification, v0.6.0:
// https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md): one file per claim
// in the runtime's CDI directory (containerd 2 and CRI-O read /var/run/cdi by default), naming a
// CDI device per allocated device, which the kubelet hands the runtime for the claim's containers.
// What the container gets is ../devices/container.ts's: on each device's CDI device its own nodes
// and the env naming the devices (and PNETIDs) of its request, so a container is told of the
// devices its requests got (cdiSpec). Written whole to a temporary file and renamed.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { posix } from 'node:path';
import { writeAtomic } from '../util/fs.js';
import { containerEdits, envLines, type ContainerEdits } from '../devices/container.js';
import type { PreparedClaim, PreparedDevice } from './claim.js';
import { DRA_DRIVER } from './claim.js';

/** The CDI kind of our devices (vendor/class). */
export const CDI_KIND = `${DRA_DRIVER}/erdma`;
const CDI_VERSION = '0.6.0';

/** A CDI name for a claim's device: [A-Za-z0-9_.:-]. */
const cdiName = (claimUid: string, device: string): string =>
  `${claimUid}-${device}`.replace(/[^A-Za-z0-9_.:-]/g, '-');

/** The CDI device IDs a claim's device is injected by. */
export function cdiIds(claimUid: string, device: string): string[] {
  return [`${CDI_KIND}=${cdiName(claimUid, device)}`];
}

/**
 * The spec a prepared claim's containers are given, as the runtime reads it. The kubelet gives a
 * container that references one request of the claim the CDI devices of that request's devices
 * only (all of them for a reference to the whole claim), so each device's own edits carry the env:
 * the devices of its request (of each request it serves, when one device serves several). A
 * container of one request is told of that request's devices, not of the claim's others (#102).
 * The runtime keeps the last of one name: a container that references a whole claim of several
 * requests is told of the last request's devices (docs/agent.md: reference each request).
 */
export function cdiSpec(p: PreparedClaim, deviceRoot: string): object {
  const edits = (ds: readonly PreparedDevice[]): ContainerEdits =>
    containerEdits(
      ds.map((d) => ({ name: d.rdmaDevice, pnetId: d.pnetId, uverbs: d.uverbs })),
      deviceRoot,
    );
  // One CDI device per name (a device shared by two requests of the claim is one name).
  const byName = new Map<string, PreparedDevice[]>();
  for (const d of p.devices) {
    const name = cdiName(p.uid, d.deviceName);
    byName.set(name, [...(byName.get(name) ?? []), d]);
  }
  return {
    cdiVersion: CDI_VERSION,
    kind: CDI_KIND,
    devices: [...byName].map(([name, ds]) => {
      const requests = new Set(ds.flatMap((d) => d.requestNames));
      const told = p.devices.filter(
        (o, i, all) =>
          o.requestNames.some((r) => requests.has(r)) &&
          all.findIndex((x) => x.rdmaDevice === o.rdmaDevice) === i,
      );
      return {
        name,
        containerEdits: {
          env: envLines(edits(told).env),
          deviceNodes: edits([ds[0]!]).deviceNodes,
        },
      };
    }),
  };
}

export class CdiSpecs {
  constructor(
    /** Where the runtime reads CDI specs (containerd's cdi_spec_dirs; /var/run/cdi by default). */
    private readonly dir: string,
    /** Prefix of the device nodes' host paths (agent.deviceRoot). */
    private readonly deviceRoot: string,
  ) {}

  path(uid: string): string {
    return posix.join(this.dir, `${DRA_DRIVER}-erdma_${uid}.json`);
  }

  write(p: PreparedClaim): void {
    mkdirSync(this.dir, { recursive: true });
    writeAtomic(
      this.path(p.uid),
      `${JSON.stringify(cdiSpec(p, this.deviceRoot), null, 1)}\n`,
      0o644,
    );
  }

  /**
   * A claim prepared before, asked for again: its spec is written again if it is gone (the
   * runtime's CDI directory is a tmpfs, /var/run/cdi, and the checkpoint outlives a reboot).
   */
  ensure(p: PreparedClaim): void {
    if (!existsSync(this.path(p.uid))) this.write(p);
  }

  /** Removes a claim's spec; none there is no error. */
  remove(uid: string): void {
    rmSync(this.path(uid), { force: true });
  }
}
