// The kubelet's DevicePlugin gRPC service on our unix socket (deviceplugin/v1beta1): the device
// list streamed with health and NUMA topology, preferred allocations, Allocate's grants, and
// requests the kubelet would never send refused with a bounded message. ./plugin.ts runs it.
import { accessSync, constants, existsSync, unlinkSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AppError } from '../../errors.js';
import type { RdmaDevice } from '../node/discovery.js';
import {
  grant,
  idIndex,
  preferredAllocation,
  type AllocationMode,
  type IdInfo,
  type PluginDevice,
} from './allocation.js';
import { devicePluginApi } from './api.js';

interface Stream {
  write(msg: unknown): boolean;
  end(): void;
  on(event: 'cancelled' | 'close' | 'error', fn: () => void): unknown;
}

type Unary<Req, Res> = (
  call: { request: Req },
  cb: (err: grpc.ServiceError | null, res?: Res) => void,
) => void;

export function listResponse(devs: readonly PluginDevice[]): unknown {
  return {
    devices: devs.map((d) => ({
      ID: d.id,
      health: d.device.healthy ? 'Healthy' : 'Unhealthy',
      // Topology is omitted when the NUMA node is unknown: the kubelet then places it anywhere.
      ...(d.device.numaNode >= 0 ? { topology: { nodes: [{ ID: d.device.numaNode }] } } : {}),
    })),
  };
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
export async function shutdown(server: grpc.Server, graceMs: number): Promise<void> {
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
export function bindFailure(dir: string, socket: string, err: unknown): unknown {
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

export interface ServiceOptions {
  /** The kubelet's device-plugins directory, and our socket in it. */
  readonly dir: string;
  readonly socketPath: string;
  readonly allocation: AllocationMode;
  readonly mode?: 'exclusive' | 'shared';
  readonly deviceRoot?: string;
  readonly logger: Logger;
}

/** The service on our socket: what it advertises is set by the plugin after each scan. */
export class DevicePluginService {
  private server: grpc.Server | undefined;
  private streams = new Set<Stream>();
  private devices: PluginDevice[] = [];
  /** `devices` indexed by ID (NUMA node, order), made by the first call after the list changed. */
  private indexed: { of: PluginDevice[]; ids: ReadonlyMap<string, IdInfo> } | undefined;
  /** The devices found at the last scan (a shared resource's IDs stand for all of them). */
  private found: RdmaDevice[] = [];

  constructor(private readonly opts: ServiceOptions) {}

  get serving(): boolean {
    return this.server !== undefined;
  }

  currentDevices(): readonly PluginDevice[] {
    return this.devices;
  }

  /** What the next calls are answered from; `announce` sends it to every ListAndWatch stream. */
  advertise(devices: PluginDevice[], found: RdmaDevice[], announce: boolean): void {
    this.found = found;
    this.devices = devices;
    if (!announce) return;
    const msg = listResponse(devices);
    for (const s of this.streams) s.write(msg);
  }

  /** What the kubelet's calls are answered from: the advertised IDs' NUMA nodes and order. */
  private ids(): ReadonlyMap<string, IdInfo> {
    const devices = this.devices;
    if (this.indexed?.of !== devices)
      this.indexed = { of: devices, ids: idIndex(devices.map((d) => [d.id, d.device.numaNode])) };
    return this.indexed.ids;
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

  /** Binds our socket (replacing a stale one) and serves. */
  async serve(): Promise<void> {
    if (existsSync(this.opts.socketPath)) unlinkSync(this.opts.socketPath);
    const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_REQUEST_BYTES });
    server.addService(devicePluginApi().DevicePlugin.service, this.handlers());
    try {
      await new Promise<void>((resolve, reject) =>
        server.bindAsync(
          `unix:${this.opts.socketPath}`,
          grpc.ServerCredentials.createInsecure(),
          (err) => (err ? reject(err) : resolve()),
        ),
      );
    } catch (err) {
      server.forceShutdown();
      throw bindFailure(this.opts.dir, this.opts.socketPath, err);
    }
    this.server = server;
  }

  /** Ends the streams, shuts the server down within its grace, and removes our socket. */
  async close(): Promise<void> {
    for (const s of this.streams) s.end();
    this.streams.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await shutdown(server, SHUTDOWN_GRACE_MS);
    if (existsSync(this.opts.socketPath)) unlinkSync(this.opts.socketPath);
  }
}
