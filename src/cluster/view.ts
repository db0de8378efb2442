// The cluster view the policy reads: an interface, a static implementation, and Node → NodeFacts.
import { isObject, stringMap } from '../policy/locate.js';
import type { ClusterView, NodeFacts } from '../policy/types.js';

/** Anything that can hand the policy its current view of the cluster. */
export interface ClusterViewSource {
  /** The latest view; cheap to call on every request. */
  current(): ClusterView;
  /** Whether the first full sync has happened (readiness). */
  readonly synced: boolean;
  /** Stops background work (watches). */
  close(): Promise<void>;
}

export class StaticViewSource implements ClusterViewSource {
  readonly synced = true;
  constructor(private readonly view: ClusterView) {}
  current(): ClusterView {
    return this.view;
  }
  async close(): Promise<void> {}
}

/** Reads a Node object (as the API server or `kubectl get node -o yaml` gives it). */
export function nodeFacts(node: unknown): NodeFacts | undefined {
  if (!isObject(node) || !isObject(node.metadata) || typeof node.metadata.name !== 'string') return undefined;
  const info = isObject(node.status) && isObject(node.status.nodeInfo) ? node.status.nodeInfo : {};
  return {
    name: node.metadata.name,
    labels: stringMap(node.metadata.labels),
    ...(typeof info.kernelVersion === 'string' ? { kernelVersion: info.kernelVersion } : {}),
    ...(typeof info.osImage === 'string' ? { osImage: info.osImage } : {}),
  };
}
