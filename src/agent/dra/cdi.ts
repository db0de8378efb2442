// What NodePrepareResources leaves on the node: one CDI spec file per prepared claim (the CDI
// specification, v0.6.0: https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md),
// which the runtime (containerd 2, CRI-O) reads to put the device nodes into the claim's
// containers, and one checkpoint of the claims prepared, so that a restarted driver (or kubelet)
// answers a claim prepared before exactly as the first time and unprepares what it no longer has
// the API's word for. Both are written whole to a temporary file and renamed: a crash leaves the
// old file or the new one, never half of one.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { posix } from 'node:path';
import { deviceEnv, type RdmaDevice } from '../node/discovery.js';
import { DRA_DRIVER } from './slice.js';

/** The CDI kind of our devices (vendor/class). */
export const CDI_KIND = `${DRA_DRIVER}/erdma`;
const CDI_VERSION = '0.6.0';
const RDMA_CM = '/dev/infiniband/rdma_cm';

/** One allocated device of a claim, as the API's allocation result names it. */
export interface PreparedDevice {
  readonly requestNames: readonly string[];
  readonly poolName: string;
  readonly deviceName: string;
  /** The RDMA device it is (erdma_0), its verbs node, its PNETID. */
  readonly rdmaDevice: string;
  readonly uverbs: string;
  readonly pnetId: string;
  readonly cdiDeviceIds: readonly string[];
  /** The allocation's share (a device several claims share, allowMultipleAllocations). */
  readonly shareId?: string;
}

export interface PreparedClaim {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly devices: readonly PreparedDevice[];
}

const atomicWrite = (path: string, text: string): void => {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, path);
};

/** A CDI name for a claim's device: [A-Za-z0-9_.:-]. */
const cdiName = (claimUid: string, device: string): string =>
  `${claimUid}-${device}`.replace(/[^A-Za-z0-9_.:-]/g, '-');

export class CdiStore {
  constructor(
    /** Where the runtime reads CDI specs (containerd's cdi_spec_dirs; /var/run/cdi by default). */
    private readonly cdiDir: string,
    /** The driver's own directory on the node (its checkpoint). */
    private readonly stateDir: string,
    /** Prefix of the device nodes' host paths (agent.deviceRoot). */
    private readonly deviceRoot: string,
  ) {}

  private specPath(uid: string): string {
    return posix.join(this.cdiDir, `${DRA_DRIVER}-erdma_${uid}.json`);
  }

  private get checkpointPath(): string {
    return posix.join(this.stateDir, 'checkpoint.json');
  }

  /** The claims prepared, by UID (an unreadable checkpoint is an error: nothing is guessed). */
  load(): Map<string, PreparedClaim> {
    let text: string;
    try {
      text = readFileSync(this.checkpointPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw err;
    }
    const parsed = JSON.parse(text) as { version: number; claims: PreparedClaim[] };
    if (parsed.version !== 1)
      throw new Error(`${this.checkpointPath}: checkpoint version ${parsed.version}, not 1`);
    return new Map(parsed.claims.map((c) => [c.uid, c]));
  }

  private save(claims: ReadonlyMap<string, PreparedClaim>): void {
    mkdirSync(this.stateDir, { recursive: true });
    atomicWrite(
      this.checkpointPath,
      `${JSON.stringify({ version: 1, claims: [...claims.values()] }, null, 1)}\n`,
    );
  }

  /** The CDI device IDs a claim's device gets (one per container-visible device set). */
  cdiIds(claimUid: string, device: string): string[] {
    return [`${CDI_KIND}=${cdiName(claimUid, device)}`];
  }

  /** The claim's CDI spec, written whole. */
  private writeSpec(p: PreparedClaim): void {
    const node = (path: string): { path: string; hostPath: string; permissions: string } => ({
      path,
      hostPath: posix.join(this.deviceRoot, path),
      permissions: 'rw',
    });
    // Which devices and PNETIDs the claim gave, as the device plugin's Allocate says them
    // (deviceEnv): once for the claim, in the spec's own edits, which the runtime applies with any
    // of its devices. Per device, one ERDMA_DEVICES= each, a container with two was told of one.
    const env = deviceEnv(p.devices.map((d) => ({ name: d.rdmaDevice, pnetId: d.pnetId })));
    const spec = {
      cdiVersion: CDI_VERSION,
      kind: CDI_KIND,
      containerEdits: {
        env: Object.entries(env)
          .filter(([, v]) => v !== '')
          .map(([k, v]) => `${k}=${v}`),
      },
      devices: p.devices.map((d) => ({
        name: cdiName(p.uid, d.deviceName),
        containerEdits: {
          deviceNodes: [...(d.uverbs ? [node(d.uverbs)] : []), node(RDMA_CM)],
        },
      })),
    };
    mkdirSync(this.cdiDir, { recursive: true });
    atomicWrite(this.specPath(p.uid), `${JSON.stringify(spec, null, 1)}\n`);
  }

  /**
   * A claim of the checkpoint asked for again: its CDI spec is written again if it is gone (the
   * runtime's CDI directory is a tmpfs, /var/run/cdi, and the checkpoint outlives a reboot).
   */
  ensure(p: PreparedClaim): void {
    if (!existsSync(this.specPath(p.uid))) this.writeSpec(p);
  }

  /** Writes the claim's CDI spec, then records it in the checkpoint. */
  prepare(
    claim: Omit<PreparedClaim, 'devices'>,
    devices: readonly {
      result: Omit<PreparedDevice, 'cdiDeviceIds' | 'rdmaDevice' | 'uverbs' | 'pnetId'>;
      rdma: RdmaDevice;
    }[],
    claims: Map<string, PreparedClaim>,
  ): PreparedClaim {
    const prepared: PreparedClaim = {
      ...claim,
      devices: devices.map(({ result, rdma }) => ({
        ...result,
        rdmaDevice: rdma.name,
        uverbs: rdma.uverbs,
        pnetId: rdma.pnetId,
        cdiDeviceIds: this.cdiIds(claim.uid, result.deviceName),
      })),
    };
    this.writeSpec(prepared);
    claims.set(claim.uid, prepared);
    this.save(claims);
    return prepared;
  }

  /** Removes the claim's CDI spec and its checkpoint entry; a claim never prepared is no error. */
  unprepare(uid: string, claims: Map<string, PreparedClaim>): void {
    rmSync(this.specPath(uid), { force: true });
    if (claims.delete(uid)) this.save(claims);
  }
}
