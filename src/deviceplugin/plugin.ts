// The aliyun/erdma device plugin as the kubelet sees it over time: it rescans the devices, serves
// its gRPC service (./grpc-service.ts) and registers (./registration.ts), and survives the
// kubelet: when kubelet.sock is recreated or our socket disappears, it serves and registers again.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { RdmaDevice } from '../devices/discovery.js';
import {
  pluginDevices,
  sharedDevices,
  type AllocationMode,
  type PluginDevice,
} from './allocation.js';
import { DevicePluginService, listResponse } from './grpc-service.js';
import { Backoff, register, sockId } from './registration.js';
import { otherRegistrant } from './registrants.js';

export interface DevicePluginOptions {
  readonly kubeletDir: string;
  readonly resourceName: string;
  /** Our socket's file name in <kubeletDir>/device-plugins. */
  readonly socketName: string;
  /** exclusive: IDs per device; shared: IDs in all. */
  readonly slotsPerDevice: number;
  readonly allocation: AllocationMode;
  /** exclusive (default): a pod gets the devices behind its IDs; shared: every ID gives every device. */
  readonly mode?: 'exclusive' | 'shared';
  /** How often devices are rescanned and sockets checked. */
  readonly pollMs: number;
  readonly discover: () => RdmaDevice[];
  readonly logger: Logger;
  /** Prefix of device node paths on the host as kubelet and the runtime see them (default '/'). */
  readonly deviceRoot?: string;
  /**
   * Register even while another device plugin holds the resource (agent.takeOverResources): the
   * kubelet keeps the newest registration, so the other one stops serving it.
   */
  readonly takeOver?: boolean;
  /** Told each time the plugin starts or stops holding back for another registrant. */
  readonly onHeldBack?: (resource: string, others: readonly string[] | undefined) => void;
}

export class ErdmaDevicePlugin {
  private readonly service: DevicePluginService;
  private snapshot = '';
  private timer: NodeJS.Timeout | undefined;
  private kubeletSock = '';
  private registered = false;
  private restarting: Promise<void> | undefined;
  private readonly backoff = new Backoff();
  private stopped = false;
  /** A restart that keeps failing: logged when it starts, when its reason changes and when it ends. */
  private failing: { reason: string; since: number; attempts: number } | undefined;
  /** Device IDs of another registrant of our resource, while we hold back for it. */
  private others: readonly string[] | undefined;

  constructor(private readonly opts: DevicePluginOptions) {
    this.service = new DevicePluginService({
      socketPath: this.socketPath,
      allocation: opts.allocation,
      logger: opts.logger,
      ...(opts.mode ? { mode: opts.mode } : {}),
      ...(opts.deviceRoot !== undefined ? { deviceRoot: opts.deviceRoot } : {}),
    });
  }

  get dir(): string {
    return join(this.opts.kubeletDir, 'device-plugins');
  }
  get socketPath(): string {
    return join(this.dir, this.opts.socketName);
  }
  get kubeletSocket(): string {
    return join(this.dir, 'kubelet.sock');
  }
  get resourceName(): string {
    return this.opts.resourceName;
  }

  get isRegistered(): boolean {
    return this.registered;
  }
  /** Another device plugin's IDs for our resource, while this one does not register for it. */
  get heldBackFor(): readonly string[] | undefined {
    return this.others;
  }

  /** Whether an ID is one this plugin advertises, or would with another slot count. */
  private ours(id: string): boolean {
    const names = new Set(
      this.opts.mode === 'shared'
        ? [this.sharedPrefix()]
        : this.service.currentDevices().map((d) => d.device.name),
    );
    const dash = id.lastIndexOf('-');
    return dash > 0 && /^\d+$/.test(id.slice(dash + 1)) && names.has(id.slice(0, dash));
  }

  /**
   * Another device plugin registered our resource (the kubelet's checkpoint holds IDs that are not
   * ours): unless told to take over, we do not register, or stop counting as registered when it
   * registered after us, and say so (log, readiness, onHeldBack) until it is gone.
   */
  private holdBack(): boolean {
    if (this.opts.takeOver) return false;
    const others = otherRegistrant(this.dir, this.opts.resourceName, (id) => this.ours(id))?.sort();
    const was = this.others;
    this.others = others;
    if ((was === undefined) !== (others === undefined)) {
      if (others)
        this.opts.logger.warn(
          { resource: this.opts.resourceName, theirIds: others.slice(0, 4), count: others.length },
          'another device plugin registered this resource with the kubelet: not taking it over (set agent.takeOverResources to serve it)',
        );
      else
        this.opts.logger.info(
          { resource: this.opts.resourceName },
          'the other registrant of this resource is gone: registering',
        );
      this.opts.onHeldBack?.(this.opts.resourceName, others);
    }
    if (others) this.registered = false;
    return others !== undefined;
  }
  currentDevices(): readonly PluginDevice[] {
    return this.service.currentDevices();
  }

  async start(): Promise<void> {
    // A kubelet that has never run here (a node booting, a test) makes its root directory when it
    // starts, so the plugin waits for it; but a mistyped directory would look just the same, for
    // good, so it says so once.
    if (!existsSync(this.opts.kubeletDir))
      this.opts.logger.warn(
        { kubeletDir: this.opts.kubeletDir },
        "the kubelet's root directory does not exist: waiting for a kubelet to make it; if it is not the kubelet's --root-dir, change agent.kubeletDir (--kubelet-dir, ERDMA_SMCR_KUBELET_DIR)",
      );
    this.rescan(false);
    // The kubelet makes its device-plugins directory; we never do (#70): until it is there, the
    // checks below wait for it, and serve and register once it appears.
    if (existsSync(this.dir)) {
      if (!statSync(this.dir).isDirectory())
        throw Object.assign(new Error(`EEXIST: ${this.dir} is not a directory`), {
          code: 'EEXIST',
          path: this.dir,
        });
      await this.service.serve();
      await this.tryRegister();
    }
    this.timer = setInterval(() => void this.tick(), this.opts.pollMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.restarting;
    await this.service.close();
  }

  /** Reads the devices; whether what is advertised changed (`announce`: tell the streams then). */
  private rescan(announce: boolean): boolean {
    let found: RdmaDevice[];
    try {
      found = this.opts.discover();
    } catch (err) {
      this.opts.logger.warn({ err }, 'device discovery failed; keeping the last list');
      return false;
    }
    const shared = this.opts.mode === 'shared';
    const next = shared
      ? sharedDevices(found, this.opts.slotsPerDevice, this.sharedPrefix())
      : pluginDevices(found, this.opts.slotsPerDevice);
    const snap =
      JSON.stringify(listResponse(next)) + (shared ? found.map((d) => d.name).join() : '');
    const changed = snap !== this.snapshot;
    this.service.advertise(
      changed ? next : [...this.service.currentDevices()],
      found,
      changed && announce,
    );
    this.snapshot = snap;
    return changed;
  }

  /** `rdma/hca` → `hca`: the IDs of a shared resource. */
  private sharedPrefix(): string {
    return (
      this.opts.resourceName
        .split('/')
        .pop()
        ?.replace(/[^A-Za-z0-9._-]/g, '-') || 'shared'
    );
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.restarting) return;
    const waiting = !existsSync(this.dir);
    if (this.rescan(!waiting) && !waiting) {
      const devices = this.service.currentDevices();
      this.opts.logger.info(
        { devices: devices.length, healthy: devices.filter((d) => d.device.healthy).length },
        'device list changed',
      );
    }
    if (waiting) return;
    const kubelet = sockId(this.kubeletSocket);
    // No server: the last restart failed, or the kubelet's directory has just appeared.
    const ownGone = !existsSync(this.socketPath) || !this.service.serving;
    const kubeletNew = kubelet !== '' && kubelet !== this.kubeletSock;
    if (ownGone || (kubeletNew && this.registered)) {
      this.restarting = this.restartLogged(ownGone, kubeletNew).finally(
        () => (this.restarting = undefined),
      );
      return;
    }
    if (this.holdBack()) return;
    if (!this.registered && kubelet !== '' && this.backoff.due()) await this.tryRegister();
  }

  /** Restarts; while it keeps failing for one reason, only the first failure is logged above debug. */
  private async restartLogged(ownGone: boolean, kubeletNew: boolean): Promise<void> {
    const log = this.opts.logger;
    const failing = this.failing;
    if (!failing)
      log.info(
        { ownGone, kubeletNew },
        'kubelet restarted or our socket vanished: serving and registering again',
      );
    try {
      await this.restart();
    } catch (err) {
      // Tried again at the next check (no server now): the plugin keeps running, not ready.
      const reason = err instanceof Error ? err.message : String(err);
      const attempts = (failing?.attempts ?? 0) + 1;
      this.failing = { reason, since: failing?.since ?? Date.now(), attempts };
      const level = failing?.reason === reason ? 'debug' : 'error';
      log[level](
        { reason, retryInMs: this.opts.pollMs, attempts },
        'cannot serve and register again; retrying',
      );
      return;
    }
    if (failing) {
      this.failing = undefined;
      log.info(
        { failedAttempts: failing.attempts, failingForMs: Date.now() - failing.since },
        'serving again after failed attempts',
      );
    }
  }

  private async restart(): Promise<void> {
    this.registered = false;
    await this.service.close();
    await this.service.serve();
    this.backoff.reset();
    await this.tryRegister();
  }

  private async tryRegister(): Promise<void> {
    if (this.holdBack()) return;
    const kubelet = sockId(this.kubeletSocket);
    if (kubelet === '') {
      this.opts.logger.info(
        { socket: this.kubeletSocket },
        'kubelet not there yet; will register when it appears',
      );
      return;
    }
    try {
      await register(this.kubeletSocket, {
        endpoint: this.opts.socketName,
        resourceName: this.opts.resourceName,
      });
      this.registered = true;
      this.kubeletSock = kubelet;
      this.backoff.reset();
      this.opts.logger.info(
        { resource: this.opts.resourceName, endpoint: this.opts.socketName },
        'registered with the kubelet',
      );
    } catch (err) {
      this.registered = false;
      const retryInMs = this.backoff.failed();
      this.opts.logger.warn(
        { err: (err as Error).message, retryInMs },
        'registration with the kubelet failed; retrying',
      );
    }
  }
}
