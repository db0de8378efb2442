// The preload plan: pods that can only land on nodes with AF_SMC (mechanism=preload) get the
// preload library and LD_PRELOAD; pods that may land on both kinds are kept to in-kernel nodes;
// clusters without preload nodes see no change at all.
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { MECHANISM_ANNOTATION, NODE_LABELS, PRELOAD } from '../../../src/constants.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import type { JsonObject } from '../../../src/policy/types.js';
import { config, node, pod, view } from '../../helpers/policy.js';

const capable = (mechanism?: string): Record<string, string> => ({
  [NODE_LABELS.capable]: 'true',
  ...(mechanism ? { [NODE_LABELS.mechanism]: mechanism } : {}),
});
const LIB = `${PRELOAD.mountPath}/${PRELOAD.library}`;
const preloadOnly = view([node('n61', '6.1.0-56-amd64', capable('preload'), 'Debian 12')]);
const mixed = view([
  node('n61', '6.1.0-56-amd64', capable('preload'), 'Debian 12'),
  node('n612', '6.12.117+deb13-amd64', capable('bpf'), 'Debian 13'),
]);
const inKernel = view([node('n612', '6.12.117+deb13-amd64', capable('bpf'), 'Debian 13')]);

function applied(original: JsonObject, patch: readonly unknown[]): JsonObject {
  return fastJsonPatch.applyPatch(
    structuredClone(original),
    structuredClone([...patch]) as fastJsonPatch.Operation[],
    true,
    false,
  ).newDocument;
}

type Container = {
  name: string;
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
};
const spec = (
  p: JsonObject,
): { containers: Container[]; initContainers?: Container[]; volumes?: unknown[] } =>
  p.spec as never;
const expressions = (p: JsonObject): unknown =>
  (
    p.spec as {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: { matchExpressions: unknown[] }[];
          };
        };
      };
    }
  ).affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.map(
    (t) => t.matchExpressions,
  );

describe('the preload plan', () => {
  it('gives every container of a pod bound to AF_SMC-only nodes the library, read-only, in LD_PRELOAD', () => {
    const p = pod({
      spec: {
        initContainers: [{ name: 'init', image: 'x' }],
        containers: [
          {
            name: 'app',
            image: 'x',
            env: [{ name: 'LD_PRELOAD', value: '/usr/lib/libjemalloc.so' }],
          },
          { name: 'side', image: 'x' },
        ],
      },
    });
    const r = evaluate(p, preloadOnly, config);
    expect(r.allowed).toBe(true);
    const out = applied(p, r.patch);
    expect(out).toEqual(r.mutated);
    const s = spec(out);
    // The user's own preload stays first; ours is appended, never replacing it.
    expect(s.containers[0]!.env).toEqual([
      { name: 'LD_PRELOAD', value: `/usr/lib/libjemalloc.so:${LIB}` },
    ]);
    expect(s.containers[1]!.env).toEqual([{ name: 'LD_PRELOAD', value: LIB }]);
    expect(s.initContainers![0]!.env).toEqual([{ name: 'LD_PRELOAD', value: LIB }]);
    for (const c of [...s.containers, ...s.initContainers!])
      expect(c.volumeMounts).toEqual([
        { name: PRELOAD.volume, mountPath: PRELOAD.mountPath, readOnly: true },
      ]);
    expect(s.volumes).toEqual([
      { name: PRELOAD.volume, hostPath: { path: config.preloadDir, type: 'Directory' } },
    ]);
    expect((out.metadata as { annotations: Record<string, string> }).annotations).toMatchObject({
      [MECHANISM_ANNOTATION]: 'preload',
    });
    expect(expressions(out)).toEqual([
      [
        { key: NODE_LABELS.capable, operator: 'In', values: ['true'] },
        { key: NODE_LABELS.mechanism, operator: 'In', values: ['preload'] },
      ],
    ]);
    expect(r.warnings.join(' ')).toMatch(/statically linked .* stay on TCP/);
  });

  it('is idempotent: the mutated pod reviewed again changes nothing', () => {
    const first = evaluate(pod(), preloadOnly, config).mutated!;
    expect(evaluate(first, preloadOnly, config).patch).toEqual([]);
  });

  it('leaves an LD_PRELOAD from valueFrom alone, and says so', () => {
    const p = pod({
      spec: {
        containers: [
          {
            name: 'app',
            image: 'x',
            env: [{ name: 'LD_PRELOAD', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }],
          },
        ],
      },
    });
    const r = evaluate(p, preloadOnly, config);
    expect(spec(r.mutated!).containers[0]!.env).toEqual(spec(p).containers[0]!.env);
    expect(r.warnings.join(' ')).toMatch(/container\(s\) app comes from valueFrom/);
  });

  it('keeps a pod that may land on both kinds to the in-kernel nodes, with no library', () => {
    const r = evaluate(pod(), mixed, config);
    const out = r.mutated!;
    expect(spec(out).containers[0]!.env).toBeUndefined();
    expect(spec(out).volumes).toBeUndefined();
    expect(expressions(out)).toEqual([
      [
        { key: NODE_LABELS.capable, operator: 'In', values: ['true'] },
        { key: NODE_LABELS.mechanism, operator: 'NotIn', values: ['preload'] },
      ],
    ]);
  });

  it('follows spec.nodeName: a pod pinned to the AF_SMC-only node of a mixed cluster gets the library', () => {
    const r = evaluate(
      pod({ spec: { nodeName: 'n61', containers: [{ name: 'a' }] } }),
      mixed,
      config,
    );
    expect(spec(r.mutated!).containers[0]!.env).toEqual([{ name: 'LD_PRELOAD', value: LIB }]);
  });

  it('changes nothing where no node uses preload, and strips a mechanism annotation a user set', () => {
    const plain = evaluate(pod(), inKernel, config).mutated!;
    expect(spec(plain).containers[0]!.env).toBeUndefined();
    expect(expressions(plain)).toEqual([
      [{ key: NODE_LABELS.capable, operator: 'In', values: ['true'] }],
    ]);
    const forged = evaluate(
      pod({ annotations: { [MECHANISM_ANNOTATION]: 'preload' } }),
      inKernel,
      config,
    );
    expect(
      (forged.mutated!.metadata as { annotations: Record<string, string> }).annotations[
        MECHANISM_ANNOTATION
      ],
    ).toBeUndefined();
  });

  it('workload templates are checked, not mutated', () => {
    const deploy = {
      kind: 'Deployment',
      metadata: { name: 'd' },
      spec: { template: { metadata: pod().metadata, spec: pod().spec } },
    };
    const r = evaluate(deploy, preloadOnly, config);
    expect(r.allowed).toBe(true);
    expect(r.patch).toEqual([]);
  });
});
