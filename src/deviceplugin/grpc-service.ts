// The kubelet's DevicePlugin gRPC service on our unix socket (deviceplugin/v1beta1): the device
// list streamed with health and NUMA topology, preferred allocations, Allocate's grants, and
// requests the kubelet would never send refused with a bounded message. ./plugin.ts runs it.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { RdmaDevice } from '../devices/discovery.js';
import {
  grant,
  idIndex,
  preferredAllocation,
  type AllocationMode,
  type IdInfo,
  type PluginDevice,
} from './allocation.js';
import { devicePluginApi } from './api.js';
import {
  grpcError,
  serveUnix,
  stopServing,
  type ServerStream,
  type Unary,
} from '../kubelet/serve.js';

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

/**
 * Largest request the kubelet could need: every advertised ID (at most 1024 slots x a few
 * devices, ~16 bytes each) fits many times over; bigger messages are refused before decoding.
 */
const MAX_REQUEST_BYTES = 1024 * 1024;
/** Unknown IDs named in an error: the rest are counted (gRPC carries the message in a header). */
const MAX_LISTED_IDS = 5;

/**
 * Refuses ID lists the kubelet would never send: longer than the list we advertise (duplicates or
 * a hostile client) or naming IDs we do not serve. Bounded work and a bounded message.
 */
function checkIds(
  lists: readonly (readonly string[] | undefined)[],
  known: ReadonlyMap<string, unknown>,
): grpc.ServiceError | undefined {
  const invalid = (message: string): grpc.ServiceError =>
    grpcError(grpc.status.INVALID_ARGUMENT, message);
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

export interface ServiceOptions {
  /** Our socket, in the kubelet's device-plugins directory. */
  readonly socketPath: string;
  readonly allocation: AllocationMode;
  readonly mode?: 'exclusive' | 'shared';
  readonly deviceRoot?: string;
  readonly logger: Logger;
}

/** The service on our socket: what it advertises is set by the plugin after each scan. */
export class DevicePluginService {
  private server: grpc.Server | undefined;
  private streams = new Set<ServerStream>();
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
    const listAndWatch = (call: ServerStream): void => {
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
    const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_REQUEST_BYTES });
    server.addService(devicePluginApi().DevicePlugin.service, this.handlers());
    await serveUnix(server, this.opts.socketPath);
    this.server = server;
  }

  /** Ends the streams, shuts the server down within its grace, and removes our socket. */
  async close(): Promise<void> {
    for (const s of this.streams) s.end();
    this.streams.clear();
    const server = this.server;
    this.server = undefined;
    await stopServing(server, this.opts.socketPath);
  }
}
