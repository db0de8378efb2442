// Builders for pods, nodes and views used across policy tests.
import { SMCR_ANNOTATION } from '../../src/constants.js';
import { defaultConfig } from '../../src/config/load.js';
import type { PolicyConfig } from '../../src/config/schema.js';
import { NodeIndex } from '../../src/policy/nodes.js';
import type { ClusterView, JsonObject, NodeFacts } from '../../src/policy/types.js';

export const config: PolicyConfig = defaultConfig().policy;

export function pod(
  opts: { annotations?: Record<string, string>; spec?: JsonObject; name?: string } = {},
): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: opts.name ?? 'p',
      namespace: 'default',
      annotations: { [SMCR_ANNOTATION]: 'true', ...(opts.annotations ?? {}) },
    },
    spec: { containers: [{ name: 'app', image: 'busybox' }], ...(opts.spec ?? {}) },
  };
}

/** An SMC-R pod whose required node affinity is these terms. */
export function affinityPod(terms: unknown[]): JsonObject {
  return pod({
    spec: {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms },
        },
      },
    },
  });
}

export function workload(
  kind: string,
  podSpec: JsonObject,
  annotations: Record<string, string> = { [SMCR_ANNOTATION]: 'true' },
): JsonObject {
  const template = {
    metadata: { annotations },
    spec: { containers: [{ name: 'app', image: 'x' }], ...podSpec },
  };
  if (kind === 'CronJob')
    return { kind, metadata: { name: 'w' }, spec: { jobTemplate: { spec: { template } } } };
  return { kind, metadata: { name: 'w' }, spec: { template } };
}

export function node(
  name: string,
  kernelVersion?: string,
  labels: Record<string, string> = {},
  osImage?: string,
): NodeFacts {
  return {
    name,
    labels,
    ...(kernelVersion ? { kernelVersion } : {}),
    ...(osImage !== undefined
      ? { osImage }
      : kernelVersion
        ? { osImage: 'Alibaba Cloud Linux 3.2104 U10 (OpenAnolis Edition)' }
        : {}),
  };
}

export const GOOD_KERNEL = '5.10.134-17.3.al8.x86_64';
export const OLD_KERNEL = '5.10.134-16.3.al8.x86_64';

export function view(nodes?: NodeFacts[], extra: Partial<ClusterView> = {}): ClusterView {
  return {
    driverMode: 'default',
    ipFamilies: ['IPv4'],
    nodesKnown: nodes !== undefined,
    nodes: new NodeIndex(nodes),
    ...extra,
  };
}

export const unknownView = view();
