// Our DRA kubelet plugin, the protocol: the kubelet finds its registration socket in
// <kubelet-dir>/plugins_registry/ (../kubelet/plugin-registration.ts: GetInfo names the driver,
// its socket and the services offered there), then calls NodePrepareResources before a pod with
// one of our devices starts and NodeUnprepareResources after it is gone, and watches our devices'
// health. The claims themselves are ./claims.ts's; what the claim says it got, ./device-status.ts;
// the health stream, ./health.ts. v1 and v1beta1 of DRAPlugin are served (v1beta1 has no share
// IDs), v1 and v1alpha1 of DRAResourceHealth.
import { posix } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { RdmaDevice } from '../devices/discovery.js';
import { grpcServices } from '../kubelet/grpc-api.js';
import { PluginRegistration } from '../kubelet/plugin-registration.js';
import { grpcError, serveUnix, stopServing, type Unary } from '../kubelet/serve.js';
import { ClaimState, type ClaimRef, type ClaimStateOptions } from './claims.js';
import type { PreparedClaim } from './claim.js';
import { ClaimStatusWriter } from './status-writer.js';
import { HEALTH_SERVICES, HealthStreams } from './health.js';
import { DRA_DRIVER } from './claim.js';

/** The services our registration offers, newest first (k8s.io/kubelet/pkg/apis/dra*\/types.go). */
export const DRA_SERVICES = ['v1.DRAPlugin', 'v1beta1.DRAPlugin', ...HEALTH_SERVICES] as const;
/** The most claims one call may name (the kubelet sends a pod's claims: a handful). */
const MAX_CLAIMS = 128;

/** The claim state's options (./claims.ts), and the protocol's own. */
export interface DraPluginOptions extends ClaimStateOptions {
  readonly kubeletDir: string;
  /** The node's SMC mechanism as its label says it (the claims' device status carries it). */
  readonly mechanism?: () => string;
  /** Called when the kubelet says it registered us (a restarted kubelet wipes our slice first). */
  readonly onRegistered?: () => void;
  readonly now?: () => number;
}

export class DraPlugin {
  readonly draSocket: string;
  private server: grpc.Server | undefined;
  private readonly registration: PluginRegistration;
  private readonly state: ClaimState;
  readonly health: HealthStreams;
  private readonly status: ClaimStatusWriter;
  registered = false;
  registrationError: string | undefined;
  /** The last device status write that failed, or undefined. */
  get statusProblem(): string | undefined {
    return this.status.problem;
  }
  /** Calls served, by method, for the tests and the metrics. */
  readonly calls = { prepare: 0, unprepare: 0, apiReads: 0, statusWrites: 0 };

  constructor(private readonly o: DraPluginOptions) {
    this.draSocket = posix.join(o.kubeletDir, 'plugins', DRA_DRIVER, 'dra.sock');
    this.state = new ClaimState(o);
    this.status = new ClaimStatusWriter({ ...o, onWritten: () => (this.calls.statusWrites += 1) });
    this.health = new HealthStreams(o.nodeName, o.now);
    this.registration = new PluginRegistration(
      o.kubeletDir,
      {
        type: 'DRAPlugin',
        name: DRA_DRIVER,
        endpoint: this.draSocket,
        supportedVersions: DRA_SERVICES,
      },
      (s) => {
        this.registered = s.registered;
        this.registrationError = s.error;
        if (s.registered) {
          o.logger.info({ driver: DRA_DRIVER }, 'registered with the kubelet');
          o.onRegistered?.();
        } else o.logger.error({ error: s.error }, 'the kubelet refused our registration');
      },
    );
  }

  /** The claims prepared now (from the checkpoint and since). */
  prepared(): readonly PreparedClaim[] {
    return this.state.prepared();
  }

  /**
   * The node's devices as the driver's last scan found them: their health to the kubelet, and to
   * the status of the claims that hold them when it changed (or was never written).
   */
  async observe(devices: readonly RdmaDevice[]): Promise<void> {
    this.health.observe(devices);
    for (const claim of this.state.prepared()) await this.status.write(claim, devices);
  }

  private handlers(v1: boolean): grpc.UntypedServiceImplementation {
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
    const prepare: Unary<{ claims: ClaimRef[] }, object> = (call, cb) => {
      const claims = call.request.claims ?? [];
      if (claims.length > MAX_CLAIMS)
        return cb(grpcError(grpc.status.INVALID_ARGUMENT, `${claims.length} claims in one call`));
      this.calls.prepare += 1;
      const done: PreparedClaim[] = [];
      void this.state
        .serial(async () => {
          const out: Record<string, object> = {};
          for (const c of claims) {
            let error: string;
            try {
              const r = await this.state.prepare(c);
              if ('claim' in r) {
                out[c.uid] = answer(r.claim);
                done.push(r.claim);
                continue;
              }
              error = r.error;
            } catch (err) {
              error = `preparing ${c.namespace}/${c.name}: ${err instanceof Error ? err.message : String(err)}`;
            }
            out[c.uid] = { devices: [], error };
            this.o.logger.warn({ claim: `${c.namespace}/${c.name}`, uid: c.uid }, error);
          }
          this.calls.apiReads = this.state.apiReads;
          return out;
        })
        .then(
          (out) => {
            cb(null, { claims: out });
            // After the answer: the kubelet does not wait on the status, which is for people.
            const devices = this.o.discover();
            for (const p of done) void this.status.write(p, devices);
          },
          (err: Error) => cb(grpcError(grpc.status.INTERNAL, err.message)),
        );
    };
    const unprepare: Unary<{ claims: ClaimRef[] }, object> = (call, cb) => {
      const claims = call.request.claims ?? [];
      this.calls.unprepare += 1;
      void this.state
        .serial(async () => {
          const out: Record<string, object> = {};
          for (const c of claims) {
            try {
              this.state.unprepare(c);
              this.status.forget(c.uid);
              out[c.uid] = { error: '' };
            } catch (err) {
              out[c.uid] = {
                error: `unpreparing ${c.namespace}/${c.name}: ${err instanceof Error ? err.message : String(err)}`,
              };
            }
          }
          return out;
        })
        .then(
          (out) => cb(null, { claims: out }),
          (err: Error) => cb(grpcError(grpc.status.INTERNAL, err.message)),
        );
    };
    return {
      NodePrepareResources: prepare,
      NodeUnprepareResources: unprepare,
    } as unknown as grpc.UntypedServiceImplementation;
  }

  /** Serves the DRA socket first, then the registration socket (whose appearance the kubelet acts on). */
  async start(): Promise<void> {
    const dra = (v: string): grpc.ServiceClientConstructor =>
      grpcServices(['dra', v], `k8s.io.kubelet.pkg.apis.dra.${v}`, ['DRAPlugin']).DRAPlugin;
    const health = (v: string): grpc.ServiceClientConstructor =>
      grpcServices(['dra-health', v], v, ['DRAResourceHealth']).DRAResourceHealth;
    const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 << 20 });
    server.addService(dra('v1').service, this.handlers(true));
    server.addService(dra('v1beta1').service, this.handlers(false));
    for (const v of ['v1', 'v1alpha1'])
      server.addService(health(v).service, {
        NodeWatchResources: this.health.handler(),
      } as unknown as grpc.UntypedServiceImplementation);
    this.health.observe(this.o.discover());
    await serveUnix(server, this.draSocket, true);
    this.server = server;
    await this.registration.start();
  }

  /** Stops serving and removes both sockets: the kubelet then counts us as gone (its 30 s grace). */
  async stop(): Promise<void> {
    await this.registration.stop();
    this.health.close();
    const server = this.server;
    this.server = undefined;
    await stopServing(server, this.draSocket);
    this.registered = false;
  }
}
