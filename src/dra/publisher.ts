// Keeps this node's ResourceSlice true: on each pass it reads the node's devices (sysfs, cheap)
// and, when they or the Node's facts changed, or the slice is gone (the kubelet deletes a driver's
// slices when it starts, and when the driver has been away 30 s), writes it with the pool's
// generation one up. Nothing changed: no API call beyond the Node and slice reads of a resync
// (every resyncMs), so a node costs the API server a GET a minute or so, not a write a second.
// One writer per node: the slice's name is the node's, and a write that meets a newer
// resourceVersion (409) reads again on the next pass.
import type { Logger } from 'pino';
import { ApiError, type KubeClient } from '../cluster/client.js';
import type { RdmaDevice } from '../devices/discovery.js';
import {
  resourceSlice,
  sliceName,
  sliceSpec,
  type NodeInfo,
  type SliceOptions,
  type SliceSpec,
} from './slice.js';

const SLICES = '/apis/resource.k8s.io/v1/resourceslices';

interface StoredSlice {
  metadata?: { resourceVersion?: string };
  spec?: SliceSpec;
}

interface V1NodeLike {
  metadata?: { name?: string; uid?: string; labels?: Record<string, string> };
  status?: { nodeInfo?: { kernelVersion?: string } };
}

/** The spec without what the API server adds (taints' timeAdded) and the generation, keys sorted. */
export function comparable(spec: SliceSpec | undefined): string {
  if (!spec) return '';
  const devices = spec.devices.map((d) => ({
    ...d,
    ...(d.taints
      ? { taints: d.taints.map(({ key, value, effect }) => ({ key, value, effect })) }
      : {}),
  }));
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v as Record<string, unknown>)
              .filter(([, x]) => x !== undefined)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, x]) => [k, sorted(x)]),
          )
        : v;
  return JSON.stringify(
    sorted({ driver: spec.driver, nodeName: spec.nodeName, pool: spec.pool.name, devices }),
  );
}

export interface PublisherOptions extends SliceOptions {
  readonly client: KubeClient;
  readonly nodeName: string;
  readonly discover: () => RdmaDevice[];
  readonly logger: Logger;
  /** How often the Node and the slice are read again even when the devices did not change. */
  readonly resyncMs: number;
  readonly now?: () => number;
}

export class SlicePublisher {
  /** What the last successful pass wrote or found: the devices' comparable form. */
  private written = '';
  private lastDevices = '';
  private resyncAt = 0;
  private node: NodeInfo | undefined;
  /** Writes made (creates and updates), for the tests' no-churn check and the metrics. */
  writes = 0;
  /** The last pass's error, or undefined when it published. */
  problem: string | undefined;
  /** The node's devices as the last pass read them (the driver's other duties use this reading). */
  devices: readonly RdmaDevice[] = [];

  constructor(private readonly o: PublisherOptions) {}

  private get path(): string {
    return `${SLICES}/${encodeURIComponent(sliceName(this.o.nodeName))}`;
  }

  private async readNode(): Promise<NodeInfo> {
    const n = await this.o.client.request<V1NodeLike>(
      'GET',
      `/api/v1/nodes/${encodeURIComponent(this.o.nodeName)}`,
    );
    return {
      name: this.o.nodeName,
      uid: n.metadata?.uid ?? '',
      labels: n.metadata?.labels ?? {},
      kernelVersion: n.status?.nodeInfo?.kernelVersion ?? '',
    };
  }

  /** Creates or updates the slice, the pool's generation one up; returns what it wrote. */
  private async write(
    stored: StoredSlice | undefined,
    devices: readonly RdmaDevice[],
  ): Promise<string> {
    const node = this.node!;
    const generation = (stored?.spec?.pool.generation ?? 0) + 1;
    const spec = sliceSpec(node, devices, this.o, generation);
    const obj = resourceSlice(node, spec);
    if (stored)
      await this.o.client.request('PUT', this.path, {
        body: {
          ...obj,
          metadata: {
            ...(obj.metadata as object),
            resourceVersion: stored.metadata?.resourceVersion,
          },
        },
      });
    else await this.o.client.request('POST', SLICES, { body: obj });
    this.writes += 1;
    this.o.logger.info(
      {
        slice: sliceName(this.o.nodeName),
        generation,
        devices: spec.devices.map((d) => d.name),
        tainted: spec.devices.filter((d) => d.taints).map((d) => d.name),
      },
      stored ? 'ResourceSlice updated' : 'ResourceSlice created',
    );
    return comparable(spec);
  }

  /** One pass; never throws (the error is kept in `problem` and logged). */
  async pass(): Promise<void> {
    const now = (this.o.now ?? Date.now)();
    const devices = this.o.discover();
    this.devices = devices;
    const devKey = JSON.stringify(devices);
    if (devKey === this.lastDevices && now < this.resyncAt && this.problem === undefined) return;
    // Passes run one at a time (the caller's), so `written` is this pass's when it ends.
    try {
      this.node = await this.readNode();
      const stored = await this.o.client.get<StoredSlice>(this.path);
      const want = sliceSpec(this.node, devices, this.o, 0);
      const have = comparable(stored?.spec);
      this.written = stored && have === comparable(want) ? have : await this.write(stored, devices);
      this.lastDevices = devKey;
      this.resyncAt = now + this.o.resyncMs;
      this.problem = undefined;
    } catch (err) {
      const conflict = err instanceof ApiError && (err.code === 409 || err.code === 404);
      this.problem = `cannot publish the ResourceSlice: ${err instanceof Error ? err.message : String(err)}`;
      if (!conflict) this.o.logger.warn({ err }, this.problem);
    }
  }

  /** The next pass reads the Node and the slice again, whatever the devices did. */
  invalidate(): void {
    this.resyncAt = 0;
  }

  /** Whether a slice spec seen in the API is the one this process last wrote or found. */
  matches(spec: SliceSpec | undefined): boolean {
    return this.written !== '' && comparable(spec) === this.written;
  }

  /** The Node as last read (its facts are in the slice). */
  get lastNode(): NodeInfo | undefined {
    return this.node;
  }

  /** Removes our slice (the driver is being uninstalled, not restarted: a restart keeps it). */
  async remove(): Promise<void> {
    try {
      await this.o.client.request('DELETE', this.path);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
}
