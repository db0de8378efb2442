// Whether a node can run SMC-R pods, from what the view knows: the agent's labels first,
// then the node's OS image and kernel, then its driver mode.
import { NODE_LABELS } from '../constants.js';
import { kernelEligibility } from './kernel.js';
import type { DriverMode, NodeFacts } from './types.js';

export type NodeStatus =
  | { readonly state: 'ok' }
  | { readonly state: 'bad'; readonly reason: string }
  | { readonly state: 'unknown'; readonly reason: string };

/** Driver mode of a node: its agent label, else the cluster's. */
export function nodeDriverMode(
  node: NodeFacts,
  clusterMode: DriverMode | undefined,
): string | undefined {
  return node.labels[NODE_LABELS.driverMode] ?? clusterMode;
}

// Node facts are immutable and checked for every pod: remember each node's status per driver mode.
const cache = new WeakMap<NodeFacts, Map<string | undefined, NodeStatus>>();

export function nodeStatus(node: NodeFacts, clusterMode: DriverMode | undefined): NodeStatus {
  let byMode = cache.get(node);
  if (!byMode) cache.set(node, (byMode = new Map()));
  let status = byMode.get(clusterMode);
  if (!status) byMode.set(clusterMode, (status = computeStatus(node, clusterMode)));
  return status;
}

function computeStatus(node: NodeFacts, clusterMode: DriverMode | undefined): NodeStatus {
  const mode = nodeDriverMode(node, clusterMode);
  if (mode !== undefined && mode !== 'default') {
    return { state: 'bad', reason: `eRDMA driver mode is "${mode}", SMC-R needs "default"` };
  }
  const capable = node.labels[NODE_LABELS.capable];
  if (capable === 'false') {
    const why = node.labels[NODE_LABELS.reason];
    return {
      state: 'bad',
      reason: `node agent reports it cannot run SMC-R${why ? ` (${why})` : ''}`,
    };
  }
  if (capable === 'true') return { state: 'ok' };
  if (node.kernelVersion === undefined || node.kernelVersion === '') {
    return { state: 'unknown', reason: 'kernel version unknown' };
  }
  const k = kernelEligibility(node.kernelVersion, node.osImage);
  return k.ok ? { state: 'ok' } : { state: 'bad', reason: k.reason };
}
