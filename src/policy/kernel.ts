// Decides whether a node's OS and kernel can run SMC-R pods; shared by the policy and the node agent.
//
// SMC-R through the pod annotation needs Alibaba Cloud Linux 3 with kernel 5.10.134-17 or later:
// that is where Alibaba's `net.smc.tcp2smc` knob exists. Alibaba Cloud Linux 4 (6.x kernels)
// removed the knob, and upstream kernels never had it.

export interface KernelVersion {
  /** e.g. [5, 10, 134] */
  readonly base: readonly number[];
  /** Numeric release parts after the dash, e.g. [17, 3] for `-17.3.al8.x86_64`. */
  readonly release: readonly number[];
  /** Distribution tag, e.g. `al8` (Alibaba Cloud Linux 3), `alnx4`, `el7`; '' when absent. */
  readonly dist: string;
}

export const MIN_KERNEL = { base: [5, 10, 134], release: [17] } as const;
export const MIN_KERNEL_TEXT = '5.10.134-17';

/** Parses `5.10.134-17.3.al8.x86_64`; returns undefined for anything that is not a kernel release. */
export function parseKernelVersion(text: string): KernelVersion | undefined {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z._+~-]*))?$/.exec(text.trim());
  if (!m) return undefined;
  const base = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  const release: number[] = [];
  let dist = '';
  for (const part of (m[4] ?? '').split(/[.-]/)) {
    if (part === '') continue;
    if (/^\d+$/.test(part) && dist === '') release.push(Number(part));
    else if (dist === '' && !/^(x86_64|aarch64|arm64|amd64)$/.test(part)) dist = part;
  }
  return { base, release, dist };
}

/** Compares two number lists lexicographically, missing parts counting as 0. */
export function compareParts(a: readonly number[], b: readonly number[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

export interface Eligibility {
  readonly ok: boolean;
  /** Why not, in a few words a user understands; '' when ok. */
  readonly reason: string;
}

const ACL3_IMAGE = /Alibaba Cloud Linux[^0-9]*3(\.|\s|$)/i;

function osReason(osImage: string | undefined, v: KernelVersion): string {
  if (osImage !== undefined && osImage !== '') {
    return ACL3_IMAGE.test(osImage) ? '' : `OS "${osImage}" is not Alibaba Cloud Linux 3`;
  }
  // No OS image known: Alibaba Cloud Linux 3 kernels carry the `al8` tag.
  return v.dist === 'al8' ? '' : 'kernel is not an Alibaba Cloud Linux 3 kernel (.al8)';
}

/** Whether a node with this kernel (and OS image, when known) can run SMC-R pods, and why not. */
export function kernelEligibility(
  kernelVersion: string | undefined,
  osImage?: string,
): Eligibility {
  if (kernelVersion === undefined || kernelVersion === '') {
    return { ok: false, reason: 'kernel version unknown' };
  }
  const v = parseKernelVersion(kernelVersion);
  if (!v) return { ok: false, reason: `kernel "${kernelVersion}" cannot be parsed` };
  const os = osReason(osImage, v);
  if (os !== '') return { ok: false, reason: os };
  if (v.base[0] !== 5 || v.base[1] !== 10) {
    return {
      ok: false,
      reason: `kernel ${kernelVersion} is not a 5.10 Alibaba Cloud Linux 3 kernel (no net.smc.tcp2smc)`,
    };
  }
  const older =
    compareParts(v.base, MIN_KERNEL.base) < 0 ||
    (compareParts(v.base, MIN_KERNEL.base) === 0 &&
      compareParts(v.release, MIN_KERNEL.release) < 0);
  if (older)
    return { ok: false, reason: `kernel ${kernelVersion} is older than ${MIN_KERNEL_TEXT}` };
  return { ok: true, reason: '' };
}
