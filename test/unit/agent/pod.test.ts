// What the agent keeps of each pod of its node (keptPod in src/agent/pod.ts, #43). The agent
// watches every pod of its node, and the in-cluster suite read its working set at 37 MB after a
// burst of pods, twice its 19 MB at rest: a pod is kept as the few fields the agent's duties read.
// A verdict on the kept form must be the verdict on the whole pod, whatever the pod.
import { readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runningStatus } from '../../../bench/node-pods.js';
import { judge } from '../../../src/agent/observe/pod-outcome.js';
import { keptPod } from '../../../src/agent/pod.js';
import { OWN_PREFIX, SETTINGS_ANNOTATION, SMCR_ANNOTATION } from '../../../src/constants.js';
import type { PluginRecord } from '../../../src/native/contract.js';

/** A ReplicaSet's pod as the real API server admitted it, named, bound and running, as a watch sends it. */
function runningPod(): V1Pod {
  const review = JSON.parse(
    readFileSync(
      'test/fixtures/apiserver-v1.37.2/admissionreview-pod-create-by-replicaset-controller.json',
      'utf8',
    ),
  ) as { request: { object: V1Pod } };
  const pod = review.request.object;
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      name: 'web-5d4f8-abcde',
      namespace: 'apps',
      uid: '6f1c2a4e-0000-4000-8000-000000000001',
      resourceVersion: '4711',
      annotations: {
        [SMCR_ANNOTATION]: 'true',
        [SETTINGS_ANNOTATION]: '{"v":1,"wmem":262144}',
        'prometheus.io/scrape': 'true',
      },
    },
    spec: { ...pod.spec!, nodeName: 'node-a' },
    status: runningStatus(pod, 3),
  };
}

const iso = fc
  .integer({ min: 0, max: 20_000 })
  .map((ms) => new Date(ms).toISOString() as unknown as Date);
const maybe = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
  fc.option(a, { nil: undefined });
/** Mostly undefined: the verdicts that depend on the sandbox's condition need most pods plain. */
const rarely = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: a, weight: 1 });
// Most pods ask for SMC-R: a verdict needs that first.
const annotations = fc
  .tuple(
    fc.constantFrom('true', 'true', '1', 'false', ''),
    fc.dictionary(
      fc.constantFrom(
        SETTINGS_ANNOTATION,
        `${OWN_PREFIX}keep-ipv6`,
        `${OWN_PREFIX}mechanism`,
        'network.alibabacloud.com/other',
        'kubectl.kubernetes.io/restartedAt',
      ),
      fc.constantFrom('true', 'false', '1', 'yes', '', 'preload'),
    ),
  )
  .map(([smcr, others]) => ({ ...others, [SMCR_ANNOTATION]: smcr }));
const condition = fc.record({
  type: fc.constantFrom('PodReadyToStartContainers', 'PodHasNetwork', 'Ready', 'Initialized'),
  status: fc.constantFrom('True', 'False', 'Unknown'),
  lastTransitionTime: maybe(iso),
});
const pods = fc
  .record({
    annotations: maybe(annotations),
    hostNetwork: rarely(fc.boolean()),
    deletionTimestamp: rarely(iso),
    phase: maybe(fc.constantFrom('Pending', 'Running', 'Running', 'Succeeded', 'Failed')),
    podIP: maybe(fc.constant('10.0.0.5')),
    startTime: maybe(iso),
    conditions: maybe(fc.array(condition, { maxLength: 4 })),
  })
  .map((r): V1Pod => {
    const base = runningPod();
    return {
      ...base,
      metadata: {
        ...base.metadata,
        annotations: r.annotations,
        deletionTimestamp: r.deletionTimestamp,
      },
      spec: { ...base.spec!, hostNetwork: r.hostNetwork },
      status: {
        ...base.status,
        phase: r.phase,
        podIP: r.podIP,
        startTime: r.startTime,
        conditions: r.conditions,
      },
    };
  });
const records = rarely(
  fc.record({
    podUid: fc.constant('6f1c2a4e-0000-4000-8000-000000000001'),
    podNamespace: fc.constant('apps'),
    podName: fc.constant('web-5d4f8-abcde'),
    netns: fc.constant('/var/run/netns/cni-1'),
    containerId: fc.constant('abc'),
    outcome: fc.constantFrom('pending', 'applied', 'partial'),
    missing: fc.constantFrom([], ['net.smc.wmem'], ['net.smc.tcp2smc'], ['SMC_PNETID']),
    mtimeMs: fc.integer({ min: 0, max: 20_000 }),
    ipv6Only: maybe(fc.boolean()),
  }) as fc.Arbitrary<PluginRecord>,
);

describe('the pods the agent keeps', () => {
  it('give every verdict the whole pod gives, whatever the pod and its record', () => {
    fc.assert(
      fc.property(
        pods,
        records,
        fc.integer({ min: 0, max: 40_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        maybe(fc.integer({ min: 0, max: 40_000 })),
        (pod, record, now, grace, goneAt) => {
          const kept = keptPod(pod);
          expect(judge(kept, record, now, grace, goneAt)).toEqual(
            judge(pod, record, now, grace, goneAt),
          );
          // The late apply hands the pod's annotations to our CNI plugin: ours and the user's, all.
          expect(kept.metadata?.annotations ?? {}).toEqual(
            Object.fromEntries(
              Object.entries(pod.metadata?.annotations ?? {}).filter(
                ([k]) => k === SMCR_ANNOTATION || k.startsWith(OWN_PREFIX),
              ),
            ),
          );
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('hold what the Events and the late apply name a pod by, and none of the rest', () => {
    const pod = runningPod();
    const kept = keptPod(pod);
    expect(kept.metadata).toEqual({
      name: 'web-5d4f8-abcde',
      namespace: 'apps',
      uid: '6f1c2a4e-0000-4000-8000-000000000001',
      resourceVersion: '4711',
      annotations: {
        [SMCR_ANNOTATION]: 'true',
        [SETTINGS_ANNOTATION]: '{"v":1,"wmem":262144}',
      },
    });
    expect(kept.spec).toEqual({});
    expect(kept.status).toEqual({
      phase: 'Running',
      podIP: '10.244.0.5',
      startTime: pod.status?.startTime,
    });
    // The whole pod (managedFields, containers, their statuses) is many times what is kept.
    const size = (o: unknown): number => JSON.stringify(o).length;
    expect(size(kept) * 8).toBeLessThan(size(pod));
  });
});
