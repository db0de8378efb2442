import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { NODE_LABELS, SETTINGS_ANNOTATION } from '../../../src/constants.js';
import { loadConfig } from '../../../src/config/load.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import { PRIVATE_NETWORKS } from '../../../src/policy/selection.js';
import type { JsonObject } from '../../../src/policy/types.js';
import { config, pod, unknownView } from '../../helpers/policy.js';

const OWN = { key: NODE_LABELS.capable, operator: 'In', values: ['true'] };

/** Applies the patch to a copy of the original, as the API server does, and returns the result. */
function applied(original: JsonObject, patch: readonly fastJsonPatch.Operation[]): JsonObject {
  return fastJsonPatch.applyPatch(
    structuredClone(original),
    structuredClone([...patch]),
    true,
    false,
  ).newDocument;
}

function terms(p: JsonObject): unknown {
  return (
    p.spec as JsonObject & {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: unknown };
        };
      };
    }
  ).affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
}

describe('mutation of an allowed SMC-R pod', () => {
  it('adds one aliyun/erdma device, the capable-node affinity and the settings annotation', () => {
    const p = pod();
    const r = evaluate(p, unknownView, config);
    const out = applied(p, r.patch);
    expect(out).toEqual(r.mutated);
    const c = (out.spec as { containers: JsonObject[] }).containers[0];
    expect(c?.resources).toEqual({
      limits: { 'aliyun/erdma': '1' },
      requests: { 'aliyun/erdma': '1' },
    });
    expect(terms(out)).toEqual([{ matchExpressions: [OWN] }]);
    const settings = JSON.parse(
      (out.metadata as { annotations: Record<string, string> }).annotations[SETTINGS_ANNOTATION] ??
        '',
    );
    expect(settings).toEqual({
      version: 1,
      sysctls: {
        'net.ipv6.conf.all.disable_ipv6': '1',
        'net.ipv6.conf.default.disable_ipv6': '1',
        'net.smc.tcp2smc': '1',
      },
      select: `nets=${PRIVATE_NETWORKS.join(',')};connect=*;listen=*`,
    });
  });

  it('escapes the "/" of annotation keys in patch paths (~1)', () => {
    const r = evaluate(pod(), unknownView, config);
    expect(r.patch.map((o) => o.path)).toContain('/metadata/annotations/smcr.erdma.io~1settings');
  });

  it('creates the annotations map when the pod has none but still asks (via a later mutation)', () => {
    const p = pod();
    const r = evaluate(p, unknownView, config);
    expect(() => applied(p, r.patch)).not.toThrow();
  });

  it('keeps a container that already asks for a device and injects nothing', () => {
    const p = pod({
      spec: {
        containers: [{ name: 'a' }, { name: 'b', resources: { limits: { 'aliyun/erdma': '1' } } }],
      },
    });
    const r = evaluate(p, unknownView, config);
    expect(r.patch.some((o) => o.path.includes('/containers/'))).toBe(false);
  });

  it('injects into the container named by smcr.erdma.io/container', () => {
    const p = pod({
      annotations: { 'smcr.erdma.io/container': 'b' },
      spec: { containers: [{ name: 'a' }, { name: 'b' }] },
    });
    const out = applied(p, evaluate(p, unknownView, config).patch);
    const cs = (out.spec as { containers: JsonObject[] }).containers;
    expect(cs[0]?.resources).toBeUndefined();
    expect(cs[1]?.resources).toEqual({
      limits: { 'aliyun/erdma': '1' },
      requests: { 'aliyun/erdma': '1' },
    });
  });

  it('injects into every container when configured with resourceContainer: all', () => {
    const all = loadConfig({ flags: { 'policy.resourceContainer': 'all' } }).policy;
    const p = pod({
      spec: { containers: [{ name: 'a' }, { name: 'b', resources: { limits: { cpu: '1' } } }] },
    });
    const out = applied(p, evaluate(p, unknownView, all).patch);
    const cs = (out.spec as { containers: JsonObject[] }).containers;
    expect(cs[1]?.resources).toEqual({
      limits: { cpu: '1', 'aliyun/erdma': '1' },
      requests: { 'aliyun/erdma': '1' },
    });
  });

  it('ANDs the capable label into every existing required term and leaves empty terms alone', () => {
    const existing = [
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
      { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] },
      {},
    ];
    const p = pod({
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: existing },
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, preference: { matchExpressions: [] } },
            ],
          },
          podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [] },
        },
      },
    });
    const out = applied(p, evaluate(p, unknownView, config).patch);
    expect(terms(out)).toEqual([
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }, OWN] },
      {
        matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }],
        matchExpressions: [OWN],
      },
      {},
    ]);
    const na = (out.spec as { affinity: { nodeAffinity: JsonObject; podAntiAffinity: unknown } })
      .affinity;
    expect(na.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution).toHaveLength(1);
    expect(na.podAntiAffinity).toEqual({ requiredDuringSchedulingIgnoredDuringExecution: [] });
  });

  it('overwrites a settings annotation the user forged', () => {
    const p = pod({
      annotations: { [SETTINGS_ANNOTATION]: '{"version":1,"sysctls":{"net.core.somaxconn":"1"}}' },
    });
    const out = applied(p, evaluate(p, unknownView, config).patch);
    const value =
      (out.metadata as { annotations: Record<string, string> }).annotations[SETTINGS_ANNOTATION] ??
      '';
    expect(value).not.toContain('somaxconn');
    expect(JSON.parse(value).sysctls['net.smc.tcp2smc']).toBe('1');
  });

  it('resolves tuning annotations and keep-ipv6 into the settings', () => {
    const p = pod({
      annotations: {
        'smcr.erdma.io/wmem': '65536',
        'smcr.erdma.io/buf-type': '1',
        'smcr.erdma.io/keep-ipv6': 'true',
      },
    });
    const out = applied(p, evaluate(p, unknownView, config).patch);
    const settings = JSON.parse(
      (out.metadata as { annotations: Record<string, string> }).annotations[SETTINGS_ANNOTATION] ??
        '',
    );
    expect(settings.sysctls).toEqual({
      'net.smc.smcr_buf_type': '1',
      'net.smc.tcp2smc': '1',
      'net.smc.wmem': '65536',
    });
  });

  it('uses cluster-wide default tuning from the configuration, overridden per pod', () => {
    const cfg = loadConfig({
      flags: { 'policy.defaultTuning': { rmem: 131072, wmem: 131072 } },
    }).policy;
    const p = pod({ annotations: { 'smcr.erdma.io/wmem': '65536' } });
    const out = applied(p, evaluate(p, unknownView, cfg).patch);
    const settings = JSON.parse(
      (out.metadata as { annotations: Record<string, string> }).annotations[SETTINGS_ANNOTATION] ??
        '',
    );
    expect(settings.sysctls['net.smc.wmem']).toBe('65536');
    expect(settings.sysctls['net.smc.rmem']).toBe('131072');
  });

  it('makes no patch for a denied pod', () => {
    const r = evaluate(pod({ spec: { hostNetwork: true } }), unknownView, config);
    expect(r.patch).toEqual([]);
  });

  it('can be told not to mutate (validation only)', () => {
    const r = evaluate(pod(), unknownView, config, { mutate: false });
    expect(r).toMatchObject({ allowed: true, patch: [] });
  });

  it('honours switches that turn resource and affinity injection off', () => {
    const cfg = loadConfig({
      flags: { 'policy.injectResource': false, 'policy.injectNodeAffinity': false },
    }).policy;
    const r = evaluate(pod(), unknownView, cfg);
    expect(r.patch.map((o) => o.path)).toEqual(['/metadata/annotations/smcr.erdma.io~1settings']);
  });
});

describe('idempotence', () => {
  it.each([
    ['a bare pod', pod()],
    [
      'a pod with affinity terms',
      pod({
        spec: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: 'z', operator: 'Exists' }] }, {}],
              },
            },
          },
        },
      }),
    ],
    ['a tuned pod', pod({ annotations: { 'smcr.erdma.io/rmem': '32768' } })],
    [
      'a pod turned off with a stale settings annotation',
      pod({
        annotations: { 'network.alibabacloud.com/erdma-smcr': 'false', [SETTINGS_ANNOTATION]: 'x' },
      }),
    ],
  ])('yields an empty patch when run on its own output: %s', (_name, p) => {
    const first = evaluate(p, unknownView, config);
    const once = applied(p, first.patch);
    const second = evaluate(once, unknownView, config);
    expect(second.patch).toEqual([]);
    expect(second.allowed).toBe(first.allowed);
  });

  it('runs on its own mutated copy, whose affinity is a constant shared frozen between copies', () => {
    const first = evaluate(pod(), unknownView, config);
    const other = evaluate(pod(), unknownView, config);
    const affinity = (first.mutated?.spec as JsonObject).affinity;
    expect(affinity).toBe((other.mutated?.spec as JsonObject).affinity);
    expect(Object.isFrozen(affinity)).toBe(true);
    expect(evaluate(first.mutated, unknownView, config).patch).toEqual([]);
    // A pod with other affinity keeps them, and gains the capable-node term in a copy of its own.
    const withTerms = pod({ spec: { affinity: { podAntiAffinity: {} } } });
    const out = applied(withTerms, evaluate(withTerms, unknownView, config).patch);
    expect(terms(out)).toEqual([{ matchExpressions: [OWN] }]);
  });

  it('replaces an affinity that is not a map with the capable-node affinity', () => {
    const p = pod({ spec: { affinity: null } });
    const r = evaluate(p, unknownView, config);
    expect(r.patch).toContainEqual({
      op: 'replace',
      path: '/spec/affinity',
      value: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [OWN] }],
          },
        },
      },
    });
    expect(terms(applied(p, r.patch))).toEqual([{ matchExpressions: [OWN] }]);
  });

  it('does not change the input object', () => {
    const p = pod();
    const before = structuredClone(p);
    evaluate(p, unknownView, config);
    expect(p).toEqual(before);
  });
});
