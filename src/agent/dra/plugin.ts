// Our DRA kubelet plugin: the kubelet finds its registration socket in
// <kubelet-dir>/plugins_registry/ (pluginregistration v1: GetInfo names the driver, its DRAPlugin
// socket and the services offered there, v1.DRAPlugin and v1beta1.DRAPlugin), then calls
// NodePrepareResources before a pod with one of our devices starts and NodeUnprepareResources
// after it is gone. Preparing reads the claim's allocation from the API (the kubelet passes only
// the claim's namespace, name and UID), writes a CDI spec for each of our devices in it and
// answers their CDI IDs, which the kubelet hands to the runtime. A claim prepared before (the
// checkpoint, ./cdi.ts) is answered as the first time, without the API; calls are serialised, so
// one claim asked twice at once is prepared once.
import { existsSync, mkdirSync, unlinkSync } from 'node:fs';
import { posix } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { KubeClient } from '../../cluster/client.js';
import { bindFailure, shutdown } from '../deviceplugin/grpc-service.js';
import { grpcServices } from '../grpc-api.js';
import type { RdmaDevice } from '../node/discovery.js';
import { CdiStore, type PreparedClaim, type PreparedDevice } from './cdi.js';
import { deviceName, DRA_DRIVER } from './slice.js';

/** The services our registration offers, newest first (k8s.io/kubelet/pkg/apis/dra/*\/types.go). */
export const DRA_SERVICES = ['v1.DRAPlugin', 'v1beta1.DRAPlugin'] as const;
const SHUTDOWN_GRACE_MS = 2000;
/** The most claims one call may name (the kubelet sends a pod's claims: a handful). */
const MAX_CLAIMS = 128;

interface Claim {
  namespace: string;
  uid: string;
  name: string;
}

interface AllocationResult {
  request: string;
  driver: string;
  pool: string;
  device: string;
  shareID?: string;
}

interface V1ResourceClaim {
  metadata?: { uid?: string };
  status?: { allocation?: { devices?: { results?: AllocationResult[] } } };
}

type Unary<Req, Res> = (
  call: { request: Req },
  cb: (err: grpc.ServiceError | null, res?: Res) => void,
) => void;

export interface DraPluginOptions {
  readonly kubeletDir: string;
  readonly nodeName: string;
  readonly client: KubeClient;
  readonly discover: () => RdmaDevice[];
  readonly cdi: CdiStore;
  readonly logger: Logger;
  /** Called when the kubelet says it registered us (a restarted kubelet wipes our slice first). */
  readonly onRegistered?: () => void;
}

export class DraPlugin {
  private readonly registrationSocket: string;
  readonly draSocket: string;
  private servers: grpc.Server[] = [];
  private claims: Map<string, PreparedClaim>;
  /** Prepare and unprepare one at a time: the checkpoint is one file. */
  private queue: Promise<unknown> = Promise.resolve();
  registered = false;
  registrationError: string | undefined;
  /** Calls served, by method, for the tests and the metrics. */
  readonly calls = { prepare: 0, unprepare: 0, apiReads: 0 };

  constructor(private readonly o: DraPluginOptions) {
    this.registrationSocket = posix.join(
      o.kubeletDir,
      'plugins_registry',
      `${DRA_DRIVER}-reg.sock`,
    );
    this.draSocket = posix.join(o.kubeletDir, 'plugins', DRA_DRIVER, 'dra.sock');
    this.claims = o.cdi.load();
  }

  /** The claims prepared now (from the checkpoint and since). */
  prepared(): readonly PreparedClaim[] {
    return [...this.claims.values()];
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.queue.then(f, f);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Our devices of the allocation, found on this node; or why not (a message). */
  private onThisNode(
    c: Claim,
    ours: readonly AllocationResult[],
  ):
    | {
        result: Omit<PreparedDevice, 'cdiDeviceIds' | 'rdmaDevice' | 'uverbs' | 'pnetId'>;
        rdma: RdmaDevice;
      }[]
    | string {
    const devices = this.o.discover();
    const byName = new Map(devices.map((d) => [deviceName(d.name), d]));
    const picked = [];
    for (const r of ours) {
      const rdma = byName.get(r.device);
      if (r.pool !== this.o.nodeName || !rdma)
        return `device ${r.pool}/${r.device} of ResourceClaim ${c.namespace}/${c.name} is not on this node (${this.o.nodeName}: ${[...byName.keys()].join(', ') || 'no devices'})`;
      picked.push({
        result: {
          requestNames: [r.request],
          poolName: r.pool,
          deviceName: r.device,
          ...(r.shareID ? { shareId: r.shareID } : {}),
        },
        rdma,
      });
    }
    return picked;
  }

  private async prepareOne(c: Claim, v1: boolean): Promise<object> {
    const known = this.claims.get(c.uid);
    const answer = (p: PreparedClaim): object => ({
      devices: p.devices.map((d) => ({
        request_names: d.requestNames,
        pool_name: d.poolName,
        device_name: d.deviceName,
        cdi_device_ids: d.cdiDeviceIds,
        ...(v1 && d.shareId ? { share_id: d.shareId } : {}),
      })),
      error: '',
    });
    if (known) {
      this.o.cdi.ensure(known);
      return answer(known);
    }
    this.calls.apiReads += 1;
    const claim = await this.o.client.get<V1ResourceClaim>(
      `/apis/resource.k8s.io/v1/namespaces/${encodeURIComponent(c.namespace)}/resourceclaims/${encodeURIComponent(c.name)}`,
    );
    if (!claim) return { devices: [], error: `ResourceClaim ${c.namespace}/${c.name} not found` };
    if (claim.metadata?.uid !== c.uid)
      return {
        devices: [],
        error: `ResourceClaim ${c.namespace}/${c.name} has UID ${claim.metadata?.uid}, not ${c.uid}: it was replaced`,
      };
    const ours = (claim.status?.allocation?.devices?.results ?? []).filter(
      (r) => r.driver === DRA_DRIVER,
    );
    if (ours.length === 0)
      return {
        devices: [],
        error: `ResourceClaim ${c.namespace}/${c.name} is not allocated any ${DRA_DRIVER} device`,
      };
    const picked = this.onThisNode(c, ours);
    if (typeof picked === 'string') return { devices: [], error: picked };
    const prepared = this.o.cdi.prepare(
      { uid: c.uid, namespace: c.namespace, name: c.name },
      picked,
      this.claims,
    );
    this.o.logger.info(
      {
        claim: `${c.namespace}/${c.name}`,
        uid: c.uid,
        devices: prepared.devices.map((d) => d.deviceName),
        cdi: prepared.devices.flatMap((d) => d.cdiDeviceIds),
      },
      'claim prepared',
    );
    return answer(prepared);
  }

  private handlers(v1: boolean): grpc.UntypedServiceImplementation {
    const prepare: Unary<{ claims: Claim[] }, object> = (call, cb) => {
      const claims = call.request.claims ?? [];
      if (claims.length > MAX_CLAIMS) {
        cb({
          code: grpc.status.INVALID_ARGUMENT,
          message: `${claims.length} claims in one call`,
        } as grpc.ServiceError);
        return;
      }
      this.calls.prepare += 1;
      void this.serial(async () => {
        const out: Record<string, object> = {};
        for (const c of claims) {
          try {
            out[c.uid] = await this.prepareOne(c, v1);
          } catch (err) {
            out[c.uid] = {
              devices: [],
              error: `preparing ${c.namespace}/${c.name}: ${err instanceof Error ? err.message : String(err)}`,
            };
          }
          const failed = (out[c.uid] as { error?: string }).error;
          if (failed) this.o.logger.warn({ claim: `${c.namespace}/${c.name}`, uid: c.uid }, failed);
        }
        return out;
      }).then(
        (out) => cb(null, { claims: out }),
        (err: Error) =>
          cb({ code: grpc.status.INTERNAL, message: err.message } as grpc.ServiceError),
      );
    };
    const unprepare: Unary<{ claims: Claim[] }, object> = (call, cb) => {
      const claims = call.request.claims ?? [];
      this.calls.unprepare += 1;
      void this.serial(async () => {
        const out: Record<string, object> = {};
        for (const c of claims) {
          try {
            this.o.cdi.unprepare(c.uid, this.claims);
            out[c.uid] = { error: '' };
            this.o.logger.info(
              { claim: `${c.namespace}/${c.name}`, uid: c.uid },
              'claim unprepared',
            );
          } catch (err) {
            out[c.uid] = {
              error: `unpreparing ${c.namespace}/${c.name}: ${err instanceof Error ? err.message : String(err)}`,
            };
          }
        }
        return out;
      }).then(
        (out) => cb(null, { claims: out }),
        (err: Error) =>
          cb({ code: grpc.status.INTERNAL, message: err.message } as grpc.ServiceError),
      );
    };
    return {
      NodePrepareResources: prepare,
      NodeUnprepareResources: unprepare,
    } as unknown as grpc.UntypedServiceImplementation;
  }

  private registrationHandlers(): grpc.UntypedServiceImplementation {
    const getInfo: Unary<unknown, object> = (_call, cb) =>
      cb(null, {
        type: 'DRAPlugin',
        name: DRA_DRIVER,
        endpoint: this.draSocket,
        supported_versions: [...DRA_SERVICES],
      });
    const notify: Unary<{ plugin_registered: boolean; error: string }, object> = (call, cb) => {
      this.registered = call.request.plugin_registered;
      this.registrationError = call.request.error || undefined;
      if (this.registered) {
        this.o.logger.info({ driver: DRA_DRIVER }, 'registered with the kubelet');
        this.o.onRegistered?.();
      } else
        this.o.logger.error({ error: call.request.error }, 'the kubelet refused our registration');
      cb(null, {});
    };
    return {
      GetInfo: getInfo,
      NotifyRegistrationStatus: notify,
    } as unknown as grpc.UntypedServiceImplementation;
  }

  private async bind(server: grpc.Server, socket: string): Promise<void> {
    mkdirSync(posix.dirname(socket), { recursive: true });
    if (existsSync(socket)) unlinkSync(socket);
    try {
      await new Promise<void>((resolve, reject) =>
        server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
          err ? reject(err) : resolve(),
        ),
      );
    } catch (err) {
      server.forceShutdown();
      throw bindFailure(posix.dirname(socket), socket, err);
    }
  }

  /** Serves the DRA socket first, then the registration socket (whose appearance the kubelet acts on). */
  async start(): Promise<void> {
    const dra = grpcServices(['dra', 'v1'], 'k8s.io.kubelet.pkg.apis.dra.v1', ['DRAPlugin']);
    const draBeta = grpcServices(['dra', 'v1beta1'], 'k8s.io.kubelet.pkg.apis.dra.v1beta1', [
      'DRAPlugin',
    ]);
    const reg = grpcServices(['pluginregistration', 'v1'], 'pluginregistration', ['Registration']);
    const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 << 20 });
    server.addService(dra.DRAPlugin.service, this.handlers(true));
    server.addService(draBeta.DRAPlugin.service, this.handlers(false));
    await this.bind(server, this.draSocket);
    this.servers.push(server);
    const registration = new grpc.Server();
    registration.addService(reg.Registration.service, this.registrationHandlers());
    await this.bind(registration, this.registrationSocket);
    this.servers.push(registration);
  }

  /** Stops serving and removes both sockets: the kubelet then counts us as gone (its 30 s grace). */
  async stop(): Promise<void> {
    const servers = this.servers.reverse();
    this.servers = [];
    for (const s of servers) await shutdown(s, SHUTDOWN_GRACE_MS);
    for (const p of [this.registrationSocket, this.draSocket]) if (existsSync(p)) unlinkSync(p);
    this.registered = false;
  }
}
