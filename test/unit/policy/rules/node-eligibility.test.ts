// The node-eligibility rule (src/policy/rules/node-eligibility.ts).
import { describe, expect, it } from 'vitest';
import { NODE_LABELS } from '../../../../src/constants.js';
import { evaluate } from '../../../../src/policy/evaluate.js';
import type { ClusterView, JsonObject } from '../../../../src/policy/types.js';
import {
  config,
  GOOD_KERNEL,
  node,
  OLD_KERNEL,
  pod,
  unknownView,
  view,
} from '../../../helpers/policy.js';

function rulesOf(obj: JsonObject, v: ClusterView = unknownView): string[] {
  return evaluate(obj, v, config).denials.map((d) => d.rule);
}

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
    expect(r.warnings.map((w) => w.message).join()).toMatch(/no kernel version/);
  });

  it('warns when the pod is pinned to a node the view does not know', () => {
    const r = evaluate(pod({ spec: { nodeName: 'elsewhere' } }), v, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings.map((w) => w.message).join()).toMatch(/no known node matches spec\.nodeName/);
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

  // #80 item 7: nothing to judge and nothing the pod's author can change: no per-object warning
  // (check says it once per run, as a note).
  it('allows, without a warning, when nothing is known of the nodes', () => {
    const r = evaluate(pod({ spec: { nodeName: 'old' } }), unknownView, config);
    expect(r.allowed).toBe(true);
    expect(r.warnings.map((w) => w.message).join()).not.toMatch(/node/);
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
