// The claims this node's DRA driver has prepared, and how one is prepared: the kubelet names a
// claim (namespace, name, UID); the claim's allocation is read from the API once, its UID must
// still be the one the kubelet named (a claim deleted and made again under its name is another
// claim), and each of our devices in it must be on this node. Then its CDI spec is written and the
// checkpoint records it. A claim prepared before is answered from the checkpoint, without the API.
// Calls run one at a time (the checkpoint is one file, and a claim asked for twice at once is
// prepared once). No gRPC here: ./plugin.ts turns these answers into the kubelet's messages.
import type { Logger } from 'pino';
import type { KubeClient } from '../cluster/client.js';
import type { RdmaDevice } from '../devices/discovery.js';
import { cdiIds, type CdiSpecs } from './cdi.js';
import type { Checkpoint } from './checkpoint.js';
import type { PreparedClaim, PreparedDevice } from './claim.js';
import { deviceName } from './slice.js';
import { DRA_DRIVER } from './claim.js';

/** A claim as the kubelet names it. */
export interface ClaimRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export interface AllocationResult {
  readonly request: string;
  readonly driver: string;
  readonly pool: string;
  readonly device: string;
  readonly shareID?: string;
}

/** The parts of a resource.k8s.io/v1 ResourceClaim read here. */
export interface V1ResourceClaim {
  readonly metadata?: { uid?: string };
  readonly status?: { allocation?: { devices?: { results?: AllocationResult[] } } };
}

/** A claim prepared, or why not (the kubelet shows the message on the pod). */
export type Prepared = { claim: PreparedClaim } | { error: string };

export const claimPath = (namespace: string, name: string): string =>
  `/apis/resource.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/resourceclaims/${encodeURIComponent(name)}`;

/**
 * Our devices of an allocation, found among this node's: each result's pool must be this node and
 * its device one of ours here; otherwise why not, naming what the node has.
 */
export function onThisNode(
  c: ClaimRef,
  results: readonly AllocationResult[],
  nodeName: string,
  devices: readonly RdmaDevice[],
): { result: AllocationResult; rdma: RdmaDevice }[] | string {
  const byName = new Map(devices.map((d) => [deviceName(d.name), d]));
  const picked = [];
  for (const r of results) {
    const rdma = byName.get(r.device);
    if (r.pool !== nodeName || !rdma)
      return `device ${r.pool}/${r.device} of ResourceClaim ${c.namespace}/${c.name} is not on this node (${nodeName}: ${[...byName.keys()].join(', ') || 'no devices'})`;
    picked.push({ result: r, rdma });
  }
  return picked;
}

export interface ClaimStateOptions {
  readonly nodeName: string;
  readonly client: KubeClient;
  readonly discover: () => RdmaDevice[];
  readonly specs: CdiSpecs;
  readonly checkpoint: Checkpoint;
  readonly logger: Logger;
}

export class ClaimState {
  private readonly claims: Map<string, PreparedClaim>;
  private queue: Promise<unknown> = Promise.resolve();
  /** Claims read from the API (a claim of the checkpoint is not), for the tests and the metrics. */
  apiReads = 0;

  constructor(private readonly o: ClaimStateOptions) {
    const loaded = o.checkpoint.load();
    if (loaded.setAside)
      o.logger.error(
        { checkpoint: o.checkpoint.path, setAside: loaded.setAside.path },
        `the checkpoint was not whole (${loaded.setAside.why}): moved aside; claims asked for again are read from the API`,
      );
    this.claims = loaded.claims;
  }

  /** The claims prepared now (from the checkpoint and since). */
  prepared(): readonly PreparedClaim[] {
    return [...this.claims.values()];
  }

  /** Runs `f` after every call before it has ended, whatever they ended with. */
  serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.queue.then(f, f);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Prepares one claim (call within `serial`). */
  async prepare(c: ClaimRef): Promise<Prepared> {
    const known = this.claims.get(c.uid);
    if (known) {
      this.o.specs.ensure(known);
      return { claim: known };
    }
    this.apiReads += 1;
    const claim = await this.o.client.get<V1ResourceClaim>(claimPath(c.namespace, c.name));
    if (!claim) return { error: `ResourceClaim ${c.namespace}/${c.name} not found` };
    if (claim.metadata?.uid !== c.uid)
      return {
        error: `ResourceClaim ${c.namespace}/${c.name} has UID ${claim.metadata?.uid}, not ${c.uid}: it was replaced`,
      };
    const ours = (claim.status?.allocation?.devices?.results ?? []).filter(
      (r) => r.driver === DRA_DRIVER,
    );
    if (ours.length === 0)
      return {
        error: `ResourceClaim ${c.namespace}/${c.name} is not allocated any ${DRA_DRIVER} device`,
      };
    const picked = onThisNode(c, ours, this.o.nodeName, this.o.discover());
    if (typeof picked === 'string') return { error: picked };
    const prepared: PreparedClaim = {
      uid: c.uid,
      namespace: c.namespace,
      name: c.name,
      devices: picked.map(({ result: r, rdma }): PreparedDevice => ({
        requestNames: [r.request],
        poolName: r.pool,
        deviceName: r.device,
        ...(r.shareID ? { shareId: r.shareID } : {}),
        rdmaDevice: rdma.name,
        uverbs: rdma.uverbs,
        pnetId: rdma.pnetId,
        cdiDeviceIds: cdiIds(c.uid, r.device),
      })),
    };
    this.o.specs.write(prepared);
    this.claims.set(c.uid, prepared);
    this.o.checkpoint.save(this.claims);
    this.o.logger.info(
      {
        claim: `${c.namespace}/${c.name}`,
        uid: c.uid,
        devices: prepared.devices.map((d) => d.deviceName),
        cdi: prepared.devices.flatMap((d) => d.cdiDeviceIds),
      },
      'claim prepared',
    );
    return { claim: prepared };
  }

  /** Removes the claim's CDI spec and its checkpoint entry; a claim never prepared is no error. */
  unprepare(c: ClaimRef): void {
    this.o.specs.remove(c.uid);
    if (this.claims.delete(c.uid)) this.o.checkpoint.save(this.claims);
    this.o.logger.info({ claim: `${c.namespace}/${c.name}`, uid: c.uid }, 'claim unprepared');
  }
}
