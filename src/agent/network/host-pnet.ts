// Host side of the pnet table: each SMC-R-capable eRDMA device is mapped to its PNETID (the ENI
// MAC) with our native binary's `pnet add` (idempotent: an existing entry is success), and the
// node file the CNI plugin reads gets the PNETID to give pod interfaces.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { NativeBinary } from '../../native/binary.js';
import { writeAtomic } from '../../util/fs.js';
import type { RdmaDevice } from '../../devices/discovery.js';

export interface HostPnetOptions {
  readonly binary: NativeBinary;
  /** Node file the CNI plugin reads (as the agent sees it). */
  readonly pnetIdFile: string;
  readonly logger: Logger;
}

export interface PnetResult {
  /** PNETID written to the node file ('' when no device qualifies). */
  readonly pnetId: string;
  /** Devices mapped now or already. */
  readonly mapped: readonly string[];
  /** `device: error` for each mapping that failed. */
  readonly errors: readonly string[];
}

/** The devices whose PNETID pods get: healthy, SMC-R-capable, in name order. */
export function pnetDevices(devices: readonly RdmaDevice[]): RdmaDevice[] {
  return devices.filter((d) => d.smcrCapable && d.healthy && d.pnetId !== '');
}

export async function ensureHostPnet(
  devices: readonly RdmaDevice[],
  o: HostPnetOptions,
): Promise<PnetResult> {
  const usable = pnetDevices(devices);
  const mapped: string[] = [];
  const errors: string[] = [];
  for (const d of usable) {
    const port = d.ports.find((p) => p.healthy)?.port ?? 1;
    try {
      await o.binary.pnetAdd(d.pnetId, { ib: d.name, port });
      mapped.push(d.name);
    } catch (err) {
      errors.push(`${d.name}: ${(err as Error).message}`);
    }
  }
  // The first usable device's PNETID is the one pods' eth0 gets (the primary ENI's device sorts first).
  const pnetId = usable[0]?.pnetId ?? '';
  let current = '';
  try {
    current = readFileSync(o.pnetIdFile, 'utf8').trim();
  } catch {
    // absent
  }
  if (pnetId !== '' && current !== pnetId) {
    mkdirSync(dirname(o.pnetIdFile), { recursive: true, mode: 0o755 });
    writeAtomic(o.pnetIdFile, `${pnetId}\n`, 0o644);
    o.logger.info({ file: o.pnetIdFile, pnetId }, 'PNETID for pod interfaces written');
  }
  if (errors.length > 0) o.logger.warn({ errors }, 'host pnet entries not all in place');
  return { pnetId, mapped, errors };
}
