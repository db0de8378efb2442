// Pods written to make the policy fail open or spend without bound (#37): label keys named like
// JavaScript built-ins and quantities in every form the API server keeps (node constraints and
// annotations far larger than any real pod: rules/object-size.test.ts). Each case failed before
// the fix it names.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SMCR_ANNOTATION } from '../../../src/constants.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import { wholeQuantity } from '../../../src/policy/quantity.js';
import { deviceCount } from '../../../src/policy/devices.js';
import { runCli } from '../../helpers/cli.js';
import {
  config,
  GOOD_KERNEL,
  node,
  OLD_KERNEL,
  pod,
  view,
  affinityPod,
} from '../../helpers/policy.js';

/** JavaScript built-ins a plain object inherits: a lookup by such a key must find nothing. */
export const BUILTIN_KEYS = [
  'toString',
  'constructor',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
];

const oldOnly = view([node('old-1', OLD_KERNEL), node('old-2', OLD_KERNEL)]);

describe('label keys named like JavaScript built-ins', () => {
  it.each(['ordinary-key', ...BUILTIN_KEYS])(
    'denies a pod whose only nodes cannot run SMC-R, though its DoesNotExist requirement is on %j',
    (key) => {
      const r = evaluate(
        affinityPod([{ matchExpressions: [{ key, operator: 'DoesNotExist' }] }]),
        oldOnly,
        config,
      );
      expect(r.allowed).toBe(false);
      expect(r.denials.map((d) => d.rule)).toEqual(['node-eligibility']);
    },
  );

  it.each(BUILTIN_KEYS)(
    'does not match nodeSelector %j to a built-in: no node has that label',
    (key) => {
      const v = view([node('good', GOOD_KERNEL), node('old', OLD_KERNEL)]);
      const r = evaluate(
        pod({ spec: { nodeSelector: { [key]: 'function toString() { [native code] }' } } }),
        v,
        config,
      );
      expect(r.warnings.map((w) => w.message).join('\n')).toContain(
        'no known node matches spec.nodeSelector',
      );
    },
  );

  it.each(BUILTIN_KEYS)('finds a node label that is really named %j', (key) => {
    const v = view([node('good', GOOD_KERNEL, { [key]: 'x' }), node('old', OLD_KERNEL)]);
    const inIt = evaluate(
      affinityPod([{ matchExpressions: [{ key, operator: 'In', values: ['x'] }] }]),
      v,
      config,
    );
    expect(inIt).toMatchObject({ allowed: true });
    expect(inIt.warnings).toEqual([]);
    const notIt = evaluate(
      affinityPod([{ matchExpressions: [{ key, operator: 'DoesNotExist' }] }]),
      v,
      config,
    );
    expect(notIt.denials.map((d) => d.rule)).toEqual(['node-eligibility']);
  });

  it('denies the same pod in `check`, read from a file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'builtin-keys-'));
    try {
      const nodes = [OLD_KERNEL, OLD_KERNEL].map((k, i) => ({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: `old-${i}` },
        status: { nodeInfo: { kernelVersion: k, osImage: 'Alibaba Cloud Linux 3' } },
      }));
      writeFileSync(
        join(dir, 'nodes.json'),
        JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }),
      );
      writeFileSync(
        join(dir, 'pod.json'),
        JSON.stringify(
          affinityPod([{ matchExpressions: [{ key: 'constructor', operator: 'DoesNotExist' }] }]),
        ),
      );
      const r = await runCli(['check', '--nodes', join(dir, 'nodes.json'), join(dir, 'pod.json')]);
      expect(r.stdout).toContain('[node-eligibility]');
      expect(r.code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('quantities, read as the API server reads them', () => {
  it.each([
    ['1', 1n],
    ['0', 0n],
    ['1k', 1000n],
    ['1Ki', 1024n],
    ['2Mi', 2n * 1024n * 1024n],
    ['1e3', 1000n],
    ['1E3', 1000n],
    ['1e+3', 1000n],
    ['1000m', 1n],
    ['1500m', undefined],
    ['0.5', undefined],
    ['1.0', 1n],
    ['.5k', 500n],
    ['5.', 5n],
    ['+2', 2n],
    ['-1', -1n],
    ['1e-3', undefined],
    ['1000e-3', 1n],
    ['1M', 1_000_000n],
    ['1m', undefined],
    ['', undefined],
    ['k', undefined],
    ['.', undefined],
    ['1 k', undefined],
    ['1kk', undefined],
    ['1KI', undefined],
    ['0x10', undefined],
    ['1e99999', undefined],
    [1, 1n],
    [1.5, undefined],
    [Number.POSITIVE_INFINITY, undefined],
  ] as const)('reads %j as %s', (text, value) => {
    expect(wholeQuantity(text)).toBe(value);
  });

  it.each(['1k', '1Ki', '1e3', '1000'])(
    'applies rdma-host-network to rdma/hca: %j, as to "1"',
    (q) => {
      const p = pod({
        spec: {
          containers: [
            {
              name: 'a',
              image: 'x',
              resources: { limits: { 'rdma/hca': q }, requests: { 'rdma/hca': q } },
            },
          ],
        },
      });
      delete (p.metadata as { annotations: Record<string, string> }).annotations[SMCR_ANNOTATION];
      const r = evaluate(p, view(undefined, { rdmaNonHostNetwork: false }), config);
      expect(r.denials.map((d) => d.rule)).toEqual(['rdma-host-network']);
    },
  );

  it('accepts aliyun/erdma "1000m", which the API server stores as "1", and counts "1k" as 1000 devices', () => {
    const p = pod({
      spec: {
        containers: [
          {
            name: 'a',
            image: 'x',
            resources: { limits: { 'aliyun/erdma': '1000m' }, requests: { 'aliyun/erdma': '1' } },
          },
        ],
      },
    });
    const r = evaluate(p, view(), config);
    expect(r.denials).toEqual([]);
    expect(deviceCount('1k')).toBe(1000);
    const half = pod({
      spec: {
        containers: [{ name: 'a', image: 'x', resources: { limits: { 'aliyun/erdma': '500m' } } }],
      },
    });
    expect(evaluate(half, view(), config).denials[0]?.message).toContain(
      'must be a whole number of devices',
    );
  });
});
