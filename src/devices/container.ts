// What a container is given for the RDMA devices it holds, on both kubelet paths: the device
// plugin's Allocate answer and the DRA driver's CDI spec are each a rendering of this. Each
// device's verbs node (/dev/infiniband/uverbsN, which libibverbs opens), the connection manager
// (rdma_cm, one for every RDMA device of the node), and the environment that names every device
// and PNETID given, as comma-separated lists (a container given two devices is told of two).
import { posix } from 'node:path';
import type { RdmaDevice } from './discovery.js';

export const RDMA_CM = '/dev/infiniband/rdma_cm';

export interface DeviceNode {
  /** In the container. */
  readonly path: string;
  /** On the host as the runtime sees it (agent.deviceRoot prefixes it; '/' on a real node). */
  readonly hostPath: string;
  readonly permissions: 'rw';
}

export type DeviceEnv = Record<'ERDMA_DEVICES' | 'ERDMA_PNETIDS', string>;

export interface ContainerEdits {
  readonly env: DeviceEnv;
  readonly deviceNodes: readonly DeviceNode[];
}

/** The devices' names and PNETIDs as lists (a device without a PNETID adds none). */
export function deviceEnv(devices: readonly Pick<RdmaDevice, 'name' | 'pnetId'>[]): DeviceEnv {
  return {
    ERDMA_DEVICES: devices.map((d) => d.name).join(','),
    ERDMA_PNETIDS: devices
      .map((d) => d.pnetId)
      .filter(Boolean)
      .join(','),
  };
}

/** What a container holding `devices` gets: their verbs nodes, rdma_cm once, and the env. */
export function containerEdits(
  devices: readonly Pick<RdmaDevice, 'name' | 'pnetId' | 'uverbs'>[],
  deviceRoot = '/',
): ContainerEdits {
  const paths = [...new Set(devices.map((d) => d.uverbs).filter((p) => p !== '')), RDMA_CM];
  return {
    env: deviceEnv(devices),
    deviceNodes: paths.map((path) => ({
      path,
      hostPath: posix.join(deviceRoot, path),
      permissions: 'rw',
    })),
  };
}

/** The env as NAME=value lines (CDI, OCI), the empty ones left out. */
export function envLines(env: DeviceEnv): string[] {
  return Object.entries(env)
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}=${v}`);
}
