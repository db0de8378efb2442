// The aliyun/erdma device plugin: serves the kubelet's DevicePlugin API on a unix socket,
// registers with the kubelet, streams devices with health and NUMA topology, and survives the
// kubelet: when kubelet.sock is recreated or our socket disappears, it serves and registers again.
import { accessSync, constants, existsSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AppError } from '../../errors.js';
import {
  grant,
  idIndex,
  pluginDevices,
  preferredAllocation,
  sharedDevices,
  type AllocationMode,
  type IdInfo,
  type PluginDevice,
} from './allocation.js';
import type { RdmaDevice } from '../node/discovery.js';
import { API_VERSION, devicePluginApi } from './api.js';

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
}

interface Stream {
  write(msg: unknown): boolean;
  end(): void;
  on(event: 'cancelled' | 'close' | 'error', fn: () => void): unknown;
}

type Unary<Req, Res> = (
  call: { request: Req },
  cb: (err: grpc.ServiceError | null, res?: Res) => void,
) => void;

function listResponse(devs: readonly PluginDevice[]): unknown {
  return {
    devices: devs.map((d) => ({
      ID: d.id,
      health: d.device.healthy ? 'Healthy' : 'Unhealthy',
      // Topology is omitted when the NUMA node is unknown: the kubelet then places it anywhere.
      ...(d.device.numaNode >= 0 ? { topology: { nodes: [{ ID: d.device.numaNode }] } } : {}),
    })),
  };
}

/**
 * Kubelet socket identity: a restarted kubelet recreates it. Inode and birth time, not ctime (which
 * changes when the socket is merely chmod-ed). A reused inode can hide a restart; the kubelet then
 * also removes our socket at start, which tick() notices on its own.
 */
function sockId(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.birthtimeMs}`;
  } catch {
    return '';
  }
}

/** How long calls in flight may take to finish when the server closes (a client may never finish one). */
const SHUTDOWN_GRACE_MS = 2000;
/**
 * Largest request the kubelet could need: every advertised ID (at most 1024 slots x a few
 * devices, ~16 bytes each) fits many times over; bigger messages are refused before decoding.
 */
const MAX_REQUEST_BYTES = 1024 * 1024;
/** Unknown IDs named in an error: the rest are counted (gRPC carries the message in a header). */
const MAX_LISTED_IDS = 5;

/** Graceful shutdown that cannot hang: calls still open after graceMs are cancelled. */
async function shutdown(server: grpc.Server, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const graceful = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([graceful, late]);
  clearTimeout(timer);
  server.forceShutdown();
}

/**
 * Refuses ID lists the kubelet would never send: longer than the list we advertise (duplicates or
 * a hostile client) or naming IDs we do not serve. Bounded work and a bounded message.
 */
function checkIds(
  lists: readonly (readonly string[] | undefined)[],
  known: ReadonlyMap<string, unknown>,
): grpc.ServiceError | undefined {
  const invalid = (message: string): grpc.ServiceError =>
    ({ code: grpc.status.INVALID_ARGUMENT, message }) as grpc.ServiceError;
  const unknown: string[] = [];
  let count = 0;
  for (const ids of lists) {
    if (!ids) continue;
    if (ids.length > known.size)
      return invalid(`a request names ${ids.length} device IDs; this plugin serves ${known.size}`);
    for (const id of ids) {
      if (known.has(id)) continue;
      count += 1;
      if (unknown.length < MAX_LISTED_IDS) unknown.push(JSON.stringify(String(id).slice(0, 64)));
    }
  }
  if (count === 0) return undefined;
  return invalid(
    `unknown device IDs: ${unknown.join(', ')}${count > unknown.length ? ` and ${count - unknown.length} more` : ''}`,
  );
}

/**
 * grpc-js's own log lines ("E No address added..." on stderr by default) as JSON lines of the
 * process logger, so that the log stays one JSON object per line. Its verbosity is still
 * GRPC_VERBOSITY's (errors only by default); GRPC_TRACE's lines come at debug. No child logger
 * and no node:util: with them the device plugin's reading 3 s after start was higher in 10 of 16
 * alternating starts, against 3 of 16 (#43; a scavenge more after start-up's last full collection).
 */
export function grpcLogsTo(logger: Logger): void {
  const line = (args: unknown[]): string => args.map(String).join(' ');
  const grpcLine = { component: 'grpc' };
  grpc.setLogger({
    error: (...args: unknown[]) => logger.error(grpcLine, line(args)),
    info: (...args: unknown[]) => logger.info(grpcLine, line(args)),
    debug: (...args: unknown[]) => logger.debug(grpcLine, line(args)),
  });
}

/**
 * Why our socket could not be served, as one line. grpc-js reports a failed bind as "No address
 * added out of total 1 resolved errors: [...]"; the directory's own errno (EACCES, EROFS), when
 * it has one, names the cause and the path.
 */
function bindFailure(dir: string, socket: string, err: unknown): unknown {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (dirErr) {
    return dirErr;
  }
  return new AppError(
    'START_FAILED',
    `cannot serve the kubelet on ${socket}: ${err instanceof Error ? err.message : String(err)}`,
  );
}

export class ErdmaDevicePlugin {
  private server: grpc.Server | undefined;
  private streams = new Set<Stream>();
  private devices: PluginDevice[] = [];
  /** `devices` indexed by ID (NUMA node, order), made by the first call after the list changed. */
  private indexed: { of: PluginDevice[]; ids: ReadonlyMap<string, IdInfo> } | undefined;
  /** The devices found at the last scan (a shared resource's IDs stand for all of them). */
  private found: RdmaDevice[] = [];
  private snapshot = '';
  private timer: NodeJS.Timeout | undefined;
  private kubeletSock = '';
  private registered = false;
  private restarting: Promise<void> | undefined;
  private backoffMs = 500;
  private nextRegisterAt = 0;
  private stopped = false;
  /** A restart that keeps failing: logged when it starts, when its reason changes and when it ends. */
  private failing: { reason: string; since: number; attempts: number } | undefined;

  constructor(private readonly opts: DevicePluginOptions) {}

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
  currentDevices(): readonly PluginDevice[] {
    return this.devices;
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
    this.rescan();
    // The kubelet makes its device-plugins directory; we never do (#70): until it is there, the
    // checks below wait for it, and serve and register once it appears.
    if (existsSync(this.dir)) {
      if (!statSync(this.dir).isDirectory())
        throw Object.assign(new Error(`EEXIST: ${this.dir} is not a directory`), {
          code: 'EEXIST',
          path: this.dir,
        });
      await this.serve();
      await this.tryRegister();
    }
    this.timer = setInterval(() => void this.tick(), this.opts.pollMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.restarting;
    await this.closeServer();
  }

  private rescan(): boolean {
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
    this.found = found;
    if (snap === this.snapshot) return false;
    this.devices = next;
    this.snapshot = snap;
    return true;
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

  /** What the kubelet's calls are answered from: the advertised IDs' NUMA nodes and order. */
  private ids(): ReadonlyMap<string, IdInfo> {
    const devices = this.devices;
    if (this.indexed?.of !== devices)
      this.indexed = { of: devices, ids: idIndex(devices.map((d) => [d.id, d.device.numaNode])) };
    return this.indexed.ids;
  }

  private broadcast(): void {
    const msg = listResponse(this.devices);
    for (const s of this.streams) s.write(msg);
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.restarting) return;
    const waiting = !existsSync(this.dir);
    if (this.rescan() && !waiting) {
      this.opts.logger.info(
        {
          devices: this.devices.length,
          healthy: this.devices.filter((d) => d.device.healthy).length,
        },
        'device list changed',
      );
      this.broadcast();
    }
    if (waiting) return;
    const kubelet = sockId(this.kubeletSocket);
    // No server: the last restart failed, or the kubelet's directory has just appeared.
    const ownGone = !existsSync(this.socketPath) || this.server === undefined;
    const kubeletNew = kubelet !== '' && kubelet !== this.kubeletSock;
    if (ownGone || (kubeletNew && this.registered)) {
      this.restarting = this.restartLogged(ownGone, kubeletNew).finally(
        () => (this.restarting = undefined),
      );
      return;
    }
    if (!this.registered && kubelet !== '' && Date.now() >= this.nextRegisterAt)
      await this.tryRegister();
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
    await this.closeServer();
    await this.serve();
    this.backoffMs = 500;
    await this.tryRegister();
  }

  private handlers(): grpc.UntypedServiceImplementation {
    const options: Unary<unknown, unknown> = (_call, cb) =>
      cb(null, { pre_start_required: false, get_preferred_allocation_available: true });
    const listAndWatch = (call: Stream): void => {
      this.streams.add(call);
      const drop = (): void => void this.streams.delete(call);
      call.on('cancelled', drop);
      call.on('close', drop);
      call.on('error', drop);
      call.write(listResponse(this.devices));
    };
    const preferred: Unary<
      {
        container_requests: {
          available_deviceIDs: string[];
          must_include_deviceIDs: string[];
          allocation_size: number;
        }[];
      },
      unknown
    > = (call, cb) => {
      const ids = this.ids();
      // The kubelet only offers IDs we advertised: anything else is refused before any sorting.
      const bad = checkIds(
        call.request.container_requests.flatMap((r) => [
          r.available_deviceIDs,
          r.must_include_deviceIDs,
        ]),
        ids,
      );
      if (bad) return cb(bad);
      cb(null, {
        container_responses: call.request.container_requests.map((r) => ({
          deviceIDs: preferredAllocation(
            r.available_deviceIDs,
            r.must_include_deviceIDs,
            r.allocation_size,
            ids,
          ),
        })),
      });
    };
    const allocate: Unary<{ container_requests: { devicesIDs: string[] }[] }, unknown> = (
      call,
      cb,
    ) => {
      const bad = checkIds(
        call.request.container_requests.map((r) => r.devicesIDs),
        this.ids(),
      );
      if (bad) return cb(bad);
      const mode = this.opts.mode === 'shared' ? 'all' : this.opts.allocation;
      const responses = call.request.container_requests.map((r) =>
        grant(r.devicesIDs, this.found, mode, this.opts.deviceRoot),
      );
      this.opts.logger.info(
        { requests: call.request.container_requests.map((r) => r.devicesIDs) },
        'allocate',
      );
      cb(null, { container_responses: responses });
    };
    const preStart: Unary<unknown, unknown> = (_call, cb) => cb(null, {});
    return {
      GetDevicePluginOptions: options,
      ListAndWatch: listAndWatch,
      GetPreferredAllocation: preferred,
      Allocate: allocate,
      PreStartContainer: preStart,
    } as unknown as grpc.UntypedServiceImplementation;
  }

  private async serve(): Promise<void> {
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
    const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_REQUEST_BYTES });
    server.addService(devicePluginApi().DevicePlugin.service, this.handlers());
    try {
      await new Promise<void>((resolve, reject) =>
        server.bindAsync(
          `unix:${this.socketPath}`,
          grpc.ServerCredentials.createInsecure(),
          (err) => (err ? reject(err) : resolve()),
        ),
      );
    } catch (err) {
      server.forceShutdown();
      throw bindFailure(this.dir, this.socketPath, err);
    }
    this.server = server;
  }

  private async closeServer(): Promise<void> {
    for (const s of this.streams) s.end();
    this.streams.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await shutdown(server, SHUTDOWN_GRACE_MS);
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
  }

  private async tryRegister(): Promise<void> {
    const kubelet = sockId(this.kubeletSocket);
    if (kubelet === '') {
      this.opts.logger.info(
        { socket: this.kubeletSocket },
        'kubelet not there yet; will register when it appears',
      );
      return;
    }
    const Client = devicePluginApi().Registration;
    const client = new Client(`unix:${this.kubeletSocket}`, grpc.credentials.createInsecure());
    try {
      await new Promise<void>((resolve, reject) =>
        (
          client as unknown as {
            Register: (
              req: unknown,
              opts: { deadline: number },
              cb: (e: Error | null) => void,
            ) => void;
          }
        ).Register(
          {
            version: API_VERSION,
            endpoint: this.opts.socketName,
            resource_name: this.opts.resourceName,
            options: { pre_start_required: false, get_preferred_allocation_available: true },
          },
          { deadline: Date.now() + 5000 },
          (err) => (err ? reject(err) : resolve()),
        ),
      );
      this.registered = true;
      this.kubeletSock = kubelet;
      this.backoffMs = 500;
      this.opts.logger.info(
        { resource: this.opts.resourceName, endpoint: this.opts.socketName },
        'registered with the kubelet',
      );
    } catch (err) {
      this.registered = false;
      this.nextRegisterAt = Date.now() + this.backoffMs;
      this.opts.logger.warn(
        { err: (err as Error).message, retryInMs: this.backoffMs },
        'registration with the kubelet failed; retrying',
      );
      this.backoffMs = Math.min(this.backoffMs * 2, 30_000);
    } finally {
      client.close();
    }
  }
}
