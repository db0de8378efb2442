// The CEL we ship, run in a CEL library (@bufbuild/cel) against the requests it must let through and
// those it must not, because the harness's API server (1.20) runs neither matchConditions (1.28+)
// nor ValidatingAdmissionPolicy (1.30+). The expressions are read from the manifests as shipped.
// #80 items 1 and 3.
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { capability, capabilityLabels } from '../../../src/agent/node/capability.js';
import { discover } from '../../../src/devices/discovery.js';
import {
  evaluate,
  podWebhookCalled,
  type CelRequest as Request,
  type Json,
} from '../../helpers/cel.js';

const AGENT = 'system:serviceaccount:erdma-smcr:erdma-smcr-agent';

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

describe('the pod webhook of the match-conditions overlay (fail closed): what waits on it', () => {
  /** The API server calls the webhook only when every condition is true. */
  const called = podWebhookCalled;

  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'job-x-abcde',
      labels: { 'job-name': 'job-x' } as Record<string, string>,
      annotations: {
        'network.alibabacloud.com/erdma-smcr': 'true',
        'smcr.erdma.io/settings': '{"version":1,"sysctls":{}}',
      },
      finalizers: ['batch.kubernetes.io/job-tracking'],
    },
    spec: { containers: [{ name: 'app', image: 'app' }] },
  };

  it('calls it for the creation of an annotated pod, never for an unannotated one', () => {
    expect(called(pod, null, 'CREATE')).toBe(true);
    const plain = clone(pod);
    plain.metadata.annotations = {} as typeof pod.metadata.annotations;
    expect(called(plain, null, 'CREATE')).toBe(false);
  });

  it.each([
    [
      'the Job controller removes its tracking finalizer',
      (p: typeof pod) => (p.metadata.finalizers = []),
    ],
    [
      'the garbage collector patches owner references',
      (p: typeof pod) =>
        Object.assign(p.metadata, {
          ownerReferences: [{ kind: 'Job', name: 'job-x', uid: 'u', apiVersion: 'batch/v1' }],
        }),
    ],
    ['kubectl label', (p: typeof pod) => (p.metadata.labels['team'] = 'a')],
    [
      'an annotation of someone else',
      (p: typeof pod) => Object.assign(p.metadata.annotations, { 'example.com/x': 'y' }),
    ],
  ])('does not call it when %s', (_, change) => {
    const next = clone(pod);
    change(next);
    expect(called(next, pod, 'UPDATE')).toBe(false);
  });

  it.each([
    [
      'a tuning annotation is added',
      (p: typeof pod) => Object.assign(p.metadata.annotations, { 'smcr.erdma.io/wmem': '1048576' }),
    ],
    [
      'the settings annotation is edited',
      (p: typeof pod) => (p.metadata.annotations['smcr.erdma.io/settings'] = '{"forged":1}'),
    ],
    [
      'the settings annotation is removed',
      (p: typeof pod) =>
        delete (p.metadata.annotations as Record<string, string>)['smcr.erdma.io/settings'],
    ],
    [
      'the SMC-R annotation changes value',
      (p: typeof pod) => (p.metadata.annotations['network.alibabacloud.com/erdma-smcr'] = 'false'),
    ],
  ])('calls it when %s', (_, change) => {
    const next = clone(pod);
    change(next);
    expect(called(next, pod, 'UPDATE')).toBe(true);
  });
});

describe('the node-restriction component: an agent may change only its own Node, only our keys', () => {
  const [policy] = yaml.loadAll(
    readFileSync('manifests/components/node-restriction/policy.yaml', 'utf8'),
  ) as {
    spec: {
      matchConditions: { expression: string }[];
      validations: { expression: string; message?: string; messageExpression?: string }[];
    };
  }[];
  /** Whether the policy applies to the request, and the validations it fails (empty: allowed). */
  const judge = (
    object: Json,
    oldObject: Json,
    req: Request,
  ): { applies: boolean; failed: string[] } => {
    const r = { ...req, operation: 'UPDATE' as const };
    const applies = policy!.spec.matchConditions.every(
      (c) => evaluate(c.expression, object, oldObject, r) === true,
    );
    const failed = policy!.spec.validations
      .filter((v) => evaluate(v.expression, object, oldObject, r) !== true)
      .map((v) => v.message ?? String(evaluate(v.messageExpression!, object, oldObject, r)));
    return { applies, failed };
  };

  // An ACK-shaped Node, before the agent's first pass.
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'cn-hangzhou.10.0.0.7',
      labels: {
        'kubernetes.io/hostname': 'cn-hangzhou.10.0.0.7',
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': 'ecs.g8a.8xlarge',
        'smcr.erdma.io/erdma-node': 'true',
      },
      annotations: { 'node.alpha.kubernetes.io/ttl': '0' },
    },
    spec: {
      podCIDR: '10.244.3.0/24',
      providerID: 'cn-hangzhou.i-bp1',
      taints: [{ key: 'dedicated', value: 'rdma', effect: 'NoSchedule' }],
    },
  };

  /** The Node after the agent's merge patch, as src/agent/node/labels.ts sends it (null removes). */
  const patched = (want: Record<string, string | null>): typeof node => {
    const next = clone(node);
    const labels = next.metadata.labels as Record<string, string>;
    for (const [k, v] of Object.entries(want))
      if (v === null) delete labels[k];
      else labels[k] = v;
    return next;
  };
  const devices = discover({ hostRoot: 'test/fixtures/sysfs/node-a' });
  const agentPatch = capabilityLabels(
    capability(
      {
        kernelRelease: '5.10.134-17.3.al8.x86_64',
        osImage: 'Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)',
        smcModule: true,
        reservedPorts: { erdma: 30608 },
      },
      devices,
    ),
  );

  it('lets the agent label its own Node as it does', () => {
    expect(Object.keys(agentPatch).every((k) => k.startsWith('smcr.erdma.io/'))).toBe(true);
    const r = judge(patched(agentPatch), node, {
      username: AGENT,
      operation: 'UPDATE',
      nodeName: node.metadata.name,
    });
    expect(r).toEqual({ applies: true, failed: [] });
  });

  it("refuses the same patch on another node's Node", () => {
    const r = judge(patched(agentPatch), node, {
      username: AGENT,
      operation: 'UPDATE',
      nodeName: 'cn-hangzhou.10.0.0.8',
    });
    expect(r.failed).toEqual([
      expect.stringMatching(/only the Node it runs on, not cn-hangzhou\.10\.0\.0\.7/),
    ]);
  });

  it('refuses a token that names no node (a cluster before 1.30, or a token not bound to a pod)', () => {
    const r = judge(patched(agentPatch), node, { username: AGENT, operation: 'UPDATE' });
    expect(r.failed).toEqual([expect.stringMatching(/Kubernetes 1\.30 or later/)]);
  });

  it.each([
    [
      'a label outside our prefix is set',
      () => patched({ 'node-role.kubernetes.io/master': '' }),
      /smcr\.erdma\.io\/ labels/,
    ],
    [
      'a label outside our prefix is removed',
      () => patched({ 'node.kubernetes.io/instance-type': null }),
      /smcr\.erdma\.io\/ labels/,
    ],
    [
      'an annotation outside our prefix changes',
      () => {
        const n = clone(node);
        n.metadata.annotations['node.alpha.kubernetes.io/ttl'] = '30';
        return n;
      },
      /smcr\.erdma\.io\/ annotations/,
    ],
    [
      'a taint is removed',
      () => {
        const n = clone(node);
        n.spec.taints = [];
        return n;
      },
      /spec/,
    ],
    [
      'the node is cordoned',
      () => {
        const n = clone(node);
        Object.assign(n.spec, { unschedulable: true });
        return n;
      },
      /spec/,
    ],
  ])('refuses its own Node when %s', (_, forge, why) => {
    const r = judge(forge(), node, {
      username: AGENT,
      operation: 'UPDATE',
      nodeName: node.metadata.name,
    });
    expect(r.applies).toBe(true);
    expect(r.failed).toEqual([expect.stringMatching(why)]);
  });

  it("leaves everyone else's requests to RBAC and the other admission plugins", () => {
    const n = clone(node);
    n.spec.taints = [];
    expect(
      judge(n, node, { username: 'system:node:cn-hangzhou.10.0.0.7', operation: 'UPDATE' }).applies,
    ).toBe(false);
  });
});
