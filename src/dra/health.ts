// Device health for the kubelet (KEP-4680, DRAResourceHealth: beta and on by default from 1.36):
// the kubelet opens one NodeWatchResources stream per driver and shows each device's health in
// the status of every container that holds it (containerStatuses[].allocatedResourcesStatus), so
// a port that goes down shows on the pods that hold the device. A device is HEALTHY while its
// port is ACTIVE, UNHEALTHY otherwise, with the port's state as the message. Every stream gets
// the whole list when it opens, again on each change, and again every heartbeat: the kubelet
// counts a reading older than its timeout as Unknown.
import type { ServerStream } from '../kubelet/serve.js';
import type { RdmaDevice } from '../devices/discovery.js';
import { deviceName } from './slice.js';

export const HEALTH_SERVICES = ['v1.DRAResourceHealth', 'v1alpha1.DRAResourceHealth'] as const;
/** How long a reading holds for the kubelet; the heartbeat is a third of it. */
export const HEALTH_TIMEOUT_S = 30;

export interface DeviceHealth {
  device: { pool_name: string; device_name: string };
  health: 'HEALTHY' | 'UNHEALTHY';
  last_updated_time: number;
  health_check_timeout_seconds: number;
  message: string;
}

/** Each device's health as the kubelet reads it, at `nowS` (Unix seconds). */
export function deviceHealth(
  nodeName: string,
  devices: readonly RdmaDevice[],
  nowS: number,
): DeviceHealth[] {
  return devices.map((d) => ({
    device: { pool_name: nodeName, device_name: deviceName(d.name) },
    health: d.healthy ? 'HEALTHY' : 'UNHEALTHY',
    last_updated_time: nowS,
    health_check_timeout_seconds: HEALTH_TIMEOUT_S,
    message: `${d.name} port 1 ${d.ports[0]?.state || 'UNKNOWN'}`,
  }));
}

const key = (h: readonly DeviceHealth[]): string =>
  JSON.stringify(h.map((x) => [x.device.device_name, x.health, x.message]));

export class HealthStreams {
  private readonly streams = new Set<ServerStream>();
  private current: DeviceHealth[] = [];
  private sentKey = '';
  private sentAt = 0;
  /** Messages sent, for the tests and the metrics. */
  sent = 0;

  constructor(
    private readonly nodeName: string,
    private readonly now: () => number = Date.now,
  ) {}

  get watchers(): number {
    return this.streams.size;
  }

  private send(stream: ServerStream): void {
    stream.write({ devices: this.current });
    this.sent += 1;
  }

  /** The node's devices as last scanned: sent when their health changed or the heartbeat is due. */
  observe(devices: readonly RdmaDevice[]): void {
    const nowMs = this.now();
    this.current = deviceHealth(this.nodeName, devices, Math.floor(nowMs / 1000));
    const k = key(this.current);
    if (k === this.sentKey && nowMs - this.sentAt < (HEALTH_TIMEOUT_S * 1000) / 3) return;
    this.sentKey = k;
    this.sentAt = nowMs;
    for (const s of this.streams) this.send(s);
  }

  /** The kubelet's NodeWatchResources: the list now, then every send until it goes. */
  handler(): (call: ServerStream) => void {
    return (call) => {
      this.streams.add(call);
      const drop = (): void => void this.streams.delete(call);
      call.on('cancelled', drop);
      call.on('close', drop);
      call.on('error', drop);
      this.send(call);
    };
  }

  /** Ends every stream (the driver stops). */
  close(): void {
    for (const s of this.streams) s.end();
    this.streams.clear();
  }
}
