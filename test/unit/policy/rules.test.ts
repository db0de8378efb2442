import { describe, expect, it } from 'vitest';
import { NODE_LABELS, SETTINGS_ANNOTATION, SMCR_ANNOTATION } from '../../../src/constants.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import type { ClusterView, JsonObject } from '../../../src/policy/types.js';
import {
  config,
  GOOD_KERNEL,
  node,
  OLD_KERNEL,
  pod,
  unknownView,
  view,
  workload,
} from '../../helpers/policy.js';
import { nodeSet } from '../../../src/policy/nodes.js';

function rulesOf(obj: JsonObject, v: ClusterView = unknownView): string[] {
  return evaluate(obj, v, config).denials.map((d) => d.rule);
}

describe('pods without the annotation', () => {
  it('leaves a pod without the annotation untouched, with no patch', () => {
    const p = pod();
    delete (p.metadata as { annotations?: unknown }).annotations;
    const r = evaluate(p, unknownView, config);
    expect(r).toMatchObject({ allowed: true, untouched: true, smcr: false, patch: [] });
  });

  it('ignores kinds that carry no pod', () => {
    expect(
      evaluate({ kind: 'Service', metadata: { name: 's' } }, unknownView, config).untouched,
    ).toBe(true);
    expect(evaluate('not an object', unknownView, config).untouched).toBe(true);
    expect(evaluate(null, unknownView, config).untouched).toBe(true);
  });
});

describe('rule annotation-value', () => {
  it.each(['yes', 'on', '', 'enabled', 'TRUE '])(
    'denies the value %j with the accepted spellings',
    (value) => {
      const r = evaluate(pod({ annotations: { [SMCR_ANNOTATION]: value } }), unknownView, config);
      expect(r.allowed).toBe(false);
      expect(r.denials[0]).toMatchObject({
        rule: 'annotation-value',
        path: `metadata.annotations[${SMCR_ANNOTATION}]`,
      });
      expect(r.denials[0]?.message).toContain('"true" or "false"');
    },
  );

  it.each([
    [true, 'a YAML boolean', '("true")'],
    [262144, 'a YAML number', '("262144")'],
    [null, 'null', ''],
    [{ on: 'yes' }, 'a map', ''],
  ])(
    'denies the unquoted YAML value %j: the API server accepts only strings',
    (value, kind, quoted) => {
      const key = 'smcr.erdma.io/wmem';
      const r = evaluate(
        pod({
          annotations: { [SMCR_ANNOTATION]: 'true', [key]: value } as unknown as Record<
            string,
            string
          >,
        }),
        unknownView,
        config,
      );
      expect(r).toMatchObject({ allowed: false, patch: [] });
      expect(r.denials).toEqual([
        {
          rule: 'annotation-value',
          path: `metadata.annotations[${key}]`,
          message: expect.stringContaining(
            `${key} is ${kind}, but annotation values must be strings`,
          ) as unknown,
        },
      ]);
      expect(r.denials[0]?.message).toContain(`quote it${quoted ? ` ${quoted}` : ''};`);
    },
  );

  it('denies an unquoted `true` on the SMC-R annotation itself, in a workload template too, and ignores other keys', () => {
    const unquoted = { [SMCR_ANNOTATION]: true, 'example.com/other': 42 } as unknown as Record<
      string,
      string
    >;
    const r = evaluate(workload('Deployment', {}, unquoted), unknownView, config);
    expect(r.denials.map((d) => [d.rule, d.path])).toEqual([
      ['annotation-value', `spec.template.metadata.annotations[${SMCR_ANNOTATION}]`],
    ]);
    expect(r.denials[0]?.message).toContain('quote it ("true")');
  });

  it.each(['1', 'T', 'True', 'TRUE'])(
    'accepts %j as true with a warning to write "true"',
    (value) => {
      const r = evaluate(pod({ annotations: { [SMCR_ANNOTATION]: value } }), unknownView, config);
      expect(r.allowed).toBe(true);
      expect(r.smcr).toBe(true);
      expect(r.warnings.join('\n')).toContain('write "true"');
    },
  );

  it('accepts "0" as false, warns, and strips a webhook-owned settings annotation', () => {
    const r = evaluate(
      pod({ annotations: { [SMCR_ANNOTATION]: '0', [SETTINGS_ANNOTATION]: '{"forged":1}' } }),
      unknownView,
      config,
    );
    expect(r.allowed).toBe(true);
    expect(r.smcr).toBe(false);
    expect(r.warnings.join()).toContain('write "false"');
    expect(r.patch).toEqual([
      { op: 'remove', path: '/metadata/annotations/smcr.erdma.io~1settings' },
    ]);
  });

  it('makes no patch for "false" when there is nothing to strip', () => {
    const r = evaluate(pod({ annotations: { [SMCR_ANNOTATION]: 'false' } }), unknownView, config);
    expect(r).toMatchObject({ allowed: true, smcr: false, patch: [] });
    expect(r.warnings).toEqual([]);
  });
});

describe('rule host-network', () => {
  it('denies a hostNetwork pod that asks for SMC-R', () => {
    const r = evaluate(pod({ spec: { hostNetwork: true } }), unknownView, config);
    expect(r.denials).toEqual([
      expect.objectContaining({ rule: 'host-network', path: 'spec.hostNetwork' }),
    ]);
    expect(r.denials[0]?.message).toMatch(/Remove hostNetwork: true/);
  });

  it.each(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'ReplicationController', 'Job'])(
    'denies a %s template with hostNetwork, pointing into spec.template',
    (kind) => {
      const r = evaluate(workload(kind, { hostNetwork: true }), unknownView, config);
      expect(r.denials[0]).toMatchObject({
        rule: 'host-network',
        path: 'spec.template.spec.hostNetwork',
      });
    },
  );

  it('points into spec.jobTemplate for a CronJob', () => {
    const r = evaluate(workload('CronJob', { hostNetwork: true }), unknownView, config);
    expect(r.denials[0]?.path).toBe('spec.jobTemplate.spec.template.spec.hostNetwork');
  });

  it('allows hostNetwork pods that do not ask for SMC-R', () => {
    expect(
      evaluate(
        pod({ annotations: { [SMCR_ANNOTATION]: 'false' }, spec: { hostNetwork: true } }),
        unknownView,
        config,
      ).allowed,
    ).toBe(true);
  });
});

describe('rule driver-mode', () => {
  it.each(['ofed', 'compat'] as const)(
    'denies SMC-R when the cluster driver mode is %s',
    (mode) => {
      const r = evaluate(pod(), view(undefined, { driverMode: mode }), config);
      expect(r.denials[0]?.rule).toBe('driver-mode');
      expect(r.denials[0]?.message).toContain(`"${mode}"`);
    },
  );

  it('skips the check when the driver mode is unknown', () => {
    expect(rulesOf(pod(), { nodesKnown: false, nodes: nodeSet() })).toEqual([]);
  });
});

describe('rule node-eligibility', () => {
  const nodes = [
    node('new', GOOD_KERNEL, { pool: 'a' }),
    node('old', OLD_KERNEL, { pool: 'b' }),
    node('acl4', '6.6.88-5.1.alnx4.x86_64', { pool: 'c' }, 'Alibaba Cloud Linux 4.0.1'),
    node('gpu', GOOD_KERNEL, { pool: 'd', [NODE_LABELS.driverMode]: 'ofed' }),
    node('said-no', GOOD_KERNEL, {
      pool: 'e',
      [NODE_LABELS.capable]: 'false',
      [NODE_LABELS.reason]: 'no-healthy-device',
    }),
    node('agent-ok', undefined, { pool: 'f', [NODE_LABELS.capable]: 'true' }),
    node('mystery', undefined, { pool: 'g' }),
  ];
  const v = view(nodes);

  it.each([
    [
      'spec.nodeName to an old kernel',
      { nodeName: 'old' },
      'spec.nodeName',
      /old \(kernel .* older than 5\.10\.134-17\)/,
    ],
    [
      'a nodeSelector to Alibaba Cloud Linux 4',
      { nodeSelector: { pool: 'c' } },
      'spec.nodeSelector',
      /acl4 \(OS "Alibaba Cloud Linux 4\.0\.1"/,
    ],
    ['an ofed node', { nodeName: 'gpu' }, 'spec.nodeName', /gpu \(eRDMA driver mode is "ofed"/],
    [
      'a node the agent labelled not capable',
      { nodeName: 'said-no' },
      'spec.nodeName',
      /no-healthy-device/,
    ],
  ])('denies a pod pinned by %s, naming the node and why', (_name, spec, path, message) => {
    const r = evaluate(pod({ spec }), v, config);
    expect(r.denials).toHaveLength(1);
    expect(r.denials[0]).toMatchObject({ rule: 'node-eligibility', path });
    expect(r.denials[0]?.message).toMatch(message);
  });

  it('denies a required node affinity whose every term selects only unfit nodes', () => {
    const affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'pool', operator: 'In', values: ['b'] }] },
            { matchExpressions: [{ key: 'pool', operator: 'In', values: ['c', 'd'] }] },
          ],
        },
      },
    };
    const r = evaluate(pod({ spec: { affinity } }), v, config);
    expect(r.denials[0]?.rule).toBe('node-eligibility');
    expect(r.denials[0]?.message).toMatch(/old .*acl4 .*gpu/);
  });

  it.each([
    ['one fit node among the candidates', { nodeSelector: { pool: 'a' } }],
    ['a node the agent labelled capable', { nodeName: 'agent-ok' }],
    ['no pinning at all', {}],
    [
      'an affinity term with NotIn that keeps a fit node',
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['b'] }] },
              ],
            },
          },
        },
      },
    ],
    [
      'matchFields on metadata.name',
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['new'] }] },
              ],
            },
          },
        },
      },
    ],
  ])('allows a pod with %s', (_name, spec) => {
    expect(rulesOf(pod({ spec }), v)).toEqual([]);
  });

  it('warns instead of denying when candidates report no kernel version', () => {
    const r = evaluate(pod({ spec: { nodeName: 'mystery' } }), v, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings.join()).toMatch(/no kernel version/);
  });

  it('warns when the pod is pinned to a node the view does not know', () => {
    const r = evaluate(pod({ spec: { nodeName: 'elsewhere' } }), v, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings.join()).toMatch(/no known node matches spec\.nodeName/);
  });

  it('denies when the view is complete and no node in the cluster qualifies', () => {
    const r = evaluate(
      pod(),
      view([
        node('old', OLD_KERNEL),
        node('x', '6.1.0-26-amd64', {}, 'Debian GNU/Linux 12 (bookworm)'),
      ]),
      config,
    );
    expect(r.denials[0]?.rule).toBe('node-eligibility');
    expect(r.denials[0]?.message).toMatch(/^no node in the cluster can run SMC-R/);
  });

  it('only warns when nothing is known of the nodes', () => {
    const r = evaluate(pod({ spec: { nodeName: 'old' } }), unknownView, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings).toContain(
      'node list unknown: kernel and driver checks on nodes were skipped',
    );
  });

  it('supports Gt, Lt, Exists and DoesNotExist', () => {
    const ns = [
      node('n1', OLD_KERNEL, { gen: '7' }),
      node('n2', GOOD_KERNEL, { gen: '9', fast: '' }),
    ];
    const term = (e: JsonObject[]): JsonObject => ({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: e }],
          },
        },
      },
    });
    expect(
      rulesOf(pod({ spec: term([{ key: 'gen', operator: 'Gt', values: ['8'] }]) }), view(ns)),
    ).toEqual([]);
    expect(
      rulesOf(pod({ spec: term([{ key: 'gen', operator: 'Lt', values: ['8'] }]) }), view(ns)),
    ).toEqual(['node-eligibility']);
    expect(rulesOf(pod({ spec: term([{ key: 'fast', operator: 'Exists' }]) }), view(ns))).toEqual(
      [],
    );
    expect(
      rulesOf(pod({ spec: term([{ key: 'fast', operator: 'DoesNotExist' }]) }), view(ns)),
    ).toEqual(['node-eligibility']);
  });
});

describe('rule ip-family', () => {
  it('denies SMC-R in an IPv6-only cluster', () => {
    expect(rulesOf(pod(), view(undefined, { ipFamilies: ['IPv6'] }))).toEqual(['ip-family']);
  });

  it('warns in a dual-stack cluster that IPv6 stays on TCP', () => {
    const r = evaluate(pod(), view(undefined, { ipFamilies: ['IPv4', 'IPv6'] }), config);
    expect(r.allowed).toBe(true);
    expect(r.warnings.join()).toMatch(/dual-stack/);
  });

  it('denies IPv6 nameservers when IPv6 will be turned off, and allows them with keep-ipv6', () => {
    const spec = { dnsPolicy: 'None', dnsConfig: { nameservers: ['10.0.0.10', 'fd00::a'] } };
    const denied = evaluate(pod({ spec }), unknownView, config);
    expect(denied.denials[0]).toMatchObject({
      rule: 'ip-family',
      path: 'spec.dnsConfig.nameservers',
    });
    const kept = evaluate(
      pod({ spec, annotations: { 'smcr.erdma.io/keep-ipv6': 'true' } }),
      unknownView,
      config,
    );
    expect(kept.allowed).toBe(true);
    expect(kept.warnings.join()).toMatch(/IPv6 stays on/);
  });

  it('warns about IPv6 hostAliases', () => {
    const r = evaluate(
      pod({ spec: { hostAliases: [{ ip: '2001:db8::1', hostnames: ['x'] }] } }),
      unknownView,
      config,
    );
    expect(r.allowed).toBe(true);
    expect(r.warnings.join()).toMatch(/IPv6 hostAliases/);
  });
});

describe('rule erdma-resource', () => {
  const res = (resources: JsonObject, field = 'containers'): JsonObject => ({
    [field]: [{ name: 'app', image: 'x', resources }],
  });

  it.each([
    ['requests without limits', { requests: { 'aliyun/erdma': '1' } }, /without a limit/],
    [
      'requests different from limits',
      { requests: { 'aliyun/erdma': '1' }, limits: { 'aliyun/erdma': '2' } },
      /differ from limits/,
    ],
    [
      '0 everywhere',
      { requests: { 'aliyun/erdma': '0' }, limits: { 'aliyun/erdma': '0' } },
      /sets aliyun\/erdma to 0/,
    ],
    ['a fractional count', { limits: { 'aliyun/erdma': '500m' } }, /whole number/],
  ])('denies %s', (_name, resources, message) => {
    const r = evaluate(pod({ spec: res(resources) }), unknownView, config);
    expect(r.denials[0]?.rule).toBe('erdma-resource');
    expect(r.denials[0]?.message).toMatch(message);
  });

  it('checks init containers too', () => {
    const r = evaluate(
      pod({
        spec: {
          ...res({ requests: { 'aliyun/erdma': 1 } }, 'initContainers'),
          containers: [{ name: 'a' }],
        },
      }),
      unknownView,
      config,
    );
    expect(r.denials[0]?.path).toBe('spec.initContainers[0].resources.limits[aliyun/erdma]');
  });

  it('allows limits alone and numeric values equal to requests', () => {
    expect(rulesOf(pod({ spec: res({ limits: { 'aliyun/erdma': '1' } }) }))).toEqual([]);
    expect(
      rulesOf(
        pod({ spec: res({ limits: { 'aliyun/erdma': 2 }, requests: { 'aliyun/erdma': '2' } }) }),
      ),
    ).toEqual([]);
  });
});

describe('rule tuning', () => {
  it.each([
    ['smcr.erdma.io/wmem', '16383', /outside 16384\.\.1073741823/],
    ['smcr.erdma.io/rmem', '1073741824', /outside/],
    ['smcr.erdma.io/rmem', '64K', /whole number/],
    ['smcr.erdma.io/buf-type', '3', /outside 0\.\.2/],
    ['smcr.erdma.io/buf-type', '-1', /whole number/],
    ['smcr.erdma.io/testlink-time', '9999999', /outside 0\.\.2147483/],
    ['smcr.erdma.io/autocorking-size', '4294967296', /outside/],
    ['smcr.erdma.io/keep-ipv6', 'maybe', /"true" or "false"/],
  ])('denies %s=%s with the range', (key, value, message) => {
    const r = evaluate(pod({ annotations: { [key]: value } }), unknownView, config);
    expect(r.denials).toHaveLength(1);
    expect(r.denials[0]).toMatchObject({ rule: 'tuning', path: `metadata.annotations[${key}]` });
    expect(r.denials[0]?.message).toMatch(message);
  });

  it.each([
    ['smcr.erdma.io/wmem', '16384'],
    ['smcr.erdma.io/rmem', '1073741823'],
    ['smcr.erdma.io/autocorking-size', '0'],
    ['smcr.erdma.io/autocorking-size', '4294967295'],
    ['smcr.erdma.io/buf-type', '0'],
    ['smcr.erdma.io/testlink-time', '0'],
  ])('accepts the boundary %s=%s', (key, value) => {
    expect(rulesOf(pod({ annotations: { [key]: value } }))).toEqual([]);
  });

  it('warns that SMC-R caps buffers above 512 KiB', () => {
    const r = evaluate(
      pod({ annotations: { 'smcr.erdma.io/wmem': '1048576' } }),
      unknownView,
      config,
    );
    expect(r.allowed).toBe(true);
    expect(r.warnings.join()).toMatch(/at most 524288/);
  });
});

describe('workload templates', () => {
  it('validates but never mutates a workload', () => {
    const r = evaluate(workload('Deployment', {}), unknownView, config);
    expect(r).toMatchObject({ allowed: true, smcr: true, patch: [] });
    expect(r.mutated).toBeUndefined();
  });

  it('warns when the annotation sits on the workload metadata instead of its template', () => {
    const w = workload('Deployment', {}, {});
    (w.metadata as JsonObject).annotations = { [SMCR_ANNOTATION]: 'true' };
    const r = evaluate(w, unknownView, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings[0]).toMatch(/spec\.template\.metadata\.annotations/);
  });

  it('reports every failing rule, not only the first', () => {
    const w = workload(
      'Deployment',
      { hostNetwork: true },
      { [SMCR_ANNOTATION]: 'true', 'smcr.erdma.io/wmem': '1' },
    );
    expect(rulesOf(w)).toEqual(['host-network', 'tuning']);
  });
});
