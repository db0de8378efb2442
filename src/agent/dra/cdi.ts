// The CDI spec of a prepared claim (the CDI specification, v0.6.0:
// https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md): one file per claim
// in the runtime's CDI directory (containerd 2 and CRI-O read /var/run/cdi by default), naming a
// CDI device per allocated device, which the kubelet hands the runtime for the claim's containers.
// What the container gets is ../devices/container.ts's: each device's own nodes on its CDI
// device, and the env naming every device and PNETID of the claim once, in the spec's own edits
// (the runtime applies them with any of the spec's devices; one ERDMA_DEVICES= per device would
// leave the container told of one). Written whole to a temporary file and renamed.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { posix } from 'node:path';
import { writeAtomic } from '../../util/fs.js';
import { containerEdits, envLines, type ContainerEdits } from '../devices/container.js';
import type { PreparedClaim } from './checkpoint.js';
import { DRA_DRIVER } from './slice.js';

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

/** The spec a prepared claim's containers are given, as the runtime reads it. */
export function cdiSpec(p: PreparedClaim, deviceRoot: string): object {
  const edits = (ds: PreparedClaim['devices']): ContainerEdits =>
    containerEdits(
      ds.map((d) => ({ name: d.rdmaDevice, pnetId: d.pnetId, uverbs: d.uverbs })),
      deviceRoot,
    );
  return {
    cdiVersion: CDI_VERSION,
    kind: CDI_KIND,
    containerEdits: { env: envLines(edits(p.devices).env) },
    devices: p.devices.map((d) => ({
      name: cdiName(p.uid, d.deviceName),
      containerEdits: { deviceNodes: edits([d]).deviceNodes },
    })),
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
