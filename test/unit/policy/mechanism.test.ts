// The preload plan: pods that can only land on nodes with AF_SMC (mechanism=preload) get the
// preload library and LD_PRELOAD; pods that may land on both kinds are kept to in-kernel nodes;
// clusters without preload nodes see no change at all.
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { MECHANISM_ANNOTATION, NODE_LABELS, PRELOAD, SELECT_ENV } from '../../../src/constants.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import { PRIVATE_NETWORKS } from '../../../src/policy/selection.js';
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

interface SecurityContext {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  runAsNonRoot?: boolean;
  runAsUser?: number;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: string };
  windowsOptions?: { hostProcess?: boolean };
}
interface PodSpec {
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: SecurityContext;
  volumes?: ({ name: string } & Record<string, unknown>)[];
  containers: (Container & {
    securityContext?: SecurityContext;
    ports?: { hostPort?: number }[];
  })[];
  initContainers?: (Container & {
    securityContext?: SecurityContext;
    ports?: { hostPort?: number }[];
  })[];
}
const all = (p: PodSpec): PodSpec['containers'] => [...(p.initContainers ?? []), ...p.containers];

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

/** The selection the library is given when the cluster names no networks: private ranges, every port. */
const SELECT = {
  name: SELECT_ENV,
  value: `nets=${PRIVATE_NETWORKS.join(',')};connect=*;listen=*`,
};

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
    // Our init container comes first and fills the emptyDir from our image; it is not preloaded.
    const [ours, ...inits] = s.initContainers!;
    expect(ours).toMatchObject({
      name: PRELOAD.initContainer,
      image: config.preloadImage,
      command: [PRELOAD.installer, 'preload-install', PRELOAD.mountPath],
      volumeMounts: [{ name: PRELOAD.volume, mountPath: PRELOAD.mountPath }],
    });
    expect(ours!.env).toBeUndefined();
    s.initContainers = inits;
    // The user's own preload stays first; ours is appended, never replacing it.
    // The pod's selection beside it: the cluster says no networks here, so the private ranges.
    expect(s.containers[0]!.env).toEqual([
      { name: 'LD_PRELOAD', value: `/usr/lib/libjemalloc.so:${LIB}` },
      SELECT,
    ]);
    expect(s.containers[1]!.env).toEqual([{ name: 'LD_PRELOAD', value: LIB }, SELECT]);
    expect(s.initContainers![0]!.env).toEqual([{ name: 'LD_PRELOAD', value: LIB }, SELECT]);
    for (const c of [...s.containers, ...s.initContainers!])
      expect(c.volumeMounts).toEqual([
        { name: PRELOAD.volume, mountPath: PRELOAD.mountPath, readOnly: true },
      ]);
    // No host path: an emptyDir our init container fills.
    expect(s.volumes).toEqual([{ name: PRELOAD.volume, emptyDir: { sizeLimit: '4Mi' } }]);
    expect((out.metadata as { annotations: Record<string, string> }).annotations).toMatchObject({
      [MECHANISM_ANNOTATION]: 'preload',
    });
    expect(expressions(out)).toEqual([
      [
        { key: NODE_LABELS.capable, operator: 'In', values: ['true'] },
        { key: NODE_LABELS.mechanism, operator: 'In', values: ['preload'] },
      ],
    ]);
    expect(r.warnings.map((w) => w.message).join(' ')).toMatch(/statically linked .* stay on TCP/);
  });

  it('is idempotent: the mutated pod reviewed again changes nothing', () => {
    const first = evaluate(pod(), preloadOnly, config).mutated!;
    expect(evaluate(first, preloadOnly, config).patch).toEqual([]);
    expect(spec(first).initContainers!.map((c) => c.name)).toEqual([PRELOAD.initContainer]);
  });

  it('uses the configured image for the init container (a mirrored registry)', () => {
    const mirrored = { ...config, preloadImage: 'registry.example/mirror/erdma-smcr:0.1.0' };
    const out = evaluate(pod(), preloadOnly, mirrored).mutated!;
    expect(spec(out).initContainers![0]).toMatchObject({ image: mirrored.preloadImage });
  });

  // Pod Security Standards, v1.28 and later (kubernetes.io/docs/concepts/security/pod-security-standards/):
  // the checks of `baseline` and `restricted` that what we add could break. The harness's API server
  // (1.20) has no Pod Security admission, so the mutated pod is checked against them here.
  const BASELINE: [string, (p: PodSpec) => string[]][] = [
    [
      'HostProcess',
      (p) =>
        all(p)
          .filter((c) => c.securityContext?.windowsOptions?.hostProcess)
          .map((c) => c.name),
    ],
    ['Host Namespaces', (p) => (p.hostNetwork || p.hostPID || p.hostIPC ? ['pod'] : [])],
    [
      'Privileged Containers',
      (p) =>
        all(p)
          .filter((c) => c.securityContext?.privileged)
          .map((c) => c.name),
    ],
    [
      'Capabilities',
      (p) =>
        all(p)
          .filter((c) =>
            (c.securityContext?.capabilities?.add ?? []).some((x) => !BASELINE_CAPS.includes(x)),
          )
          .map((c) => c.name),
    ],
    [
      'HostPath Volumes',
      (p) => (p.volumes ?? []).filter((v) => 'hostPath' in v).map((v) => v.name),
    ],
    [
      'Host Ports',
      (p) =>
        all(p)
          .filter((c) => (c.ports ?? []).some((x) => x.hostPort))
          .map((c) => c.name),
    ],
    [
      'Seccomp',
      (p) =>
        all(p)
          .filter((c) => c.securityContext?.seccompProfile?.type === 'Unconfined')
          .map((c) => c.name),
    ],
  ];
  const BASELINE_CAPS = [
    'AUDIT_WRITE',
    'CHOWN',
    'DAC_OVERRIDE',
    'FOWNER',
    'FSETID',
    'KILL',
    'MKNOD',
    'NET_BIND_SERVICE',
    'SETFCAP',
    'SETGID',
    'SETPCAP',
    'SETUID',
    'SYS_CHROOT',
  ];
  const RESTRICTED_VOLUMES = [
    'configMap',
    'csi',
    'downwardAPI',
    'emptyDir',
    'ephemeral',
    'persistentVolumeClaim',
    'projected',
    'secret',
  ];
  const RESTRICTED: [string, (p: PodSpec) => string[]][] = [
    ...BASELINE,
    [
      'Volume Types',
      (p) =>
        (p.volumes ?? [])
          .filter((v) => !Object.keys(v).some((k) => RESTRICTED_VOLUMES.includes(k)))
          .map((v) => v.name),
    ],
    [
      'Privilege Escalation',
      (p) =>
        all(p)
          .filter((c) => c.securityContext?.allowPrivilegeEscalation !== false)
          .map((c) => c.name),
    ],
    [
      'Running as Non-root',
      (p) =>
        all(p)
          .filter((c) => !(c.securityContext?.runAsNonRoot ?? p.securityContext?.runAsNonRoot))
          .map((c) => c.name),
    ],
    [
      'Running as Non-root user',
      (p) =>
        all(p)
          .filter((c) => c.securityContext?.runAsUser === 0)
          .map((c) => c.name),
    ],
    [
      'Seccomp (restricted)',
      (p) =>
        all(p)
          .filter(
            (c) =>
              !['RuntimeDefault', 'Localhost'].includes(
                c.securityContext?.seccompProfile?.type ??
                  p.securityContext?.seccompProfile?.type ??
                  '',
              ),
          )
          .map((c) => c.name),
    ],
    [
      'Capabilities (restricted)',
      (p) =>
        all(p)
          .filter(
            (c) =>
              !(c.securityContext?.capabilities?.drop ?? []).includes('ALL') ||
              (c.securityContext?.capabilities?.add ?? []).some((x) => x !== 'NET_BIND_SERVICE'),
          )
          .map((c) => c.name),
    ],
  ];
  const violations = (p: JsonObject, profile: [string, (p: PodSpec) => string[]][]): string[] =>
    profile.flatMap(([name, check]) => check(p.spec as PodSpec).map((who) => `${name}: ${who}`));
  // A pod written for a namespace that enforces `restricted`.
  const restricted = pod({
    spec: {
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'app',
          image: 'x',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  });

  it('leaves a pod for preload nodes within Pod Security baseline and restricted', () => {
    expect(violations(restricted, RESTRICTED)).toEqual([]);
    const out = evaluate(restricted, preloadOnly, config).mutated!;
    expect(spec(out).initContainers).toHaveLength(1);
    expect(violations(out, BASELINE)).toEqual([]);
    expect(violations(out, RESTRICTED)).toEqual([]);
    // The checks can fail: what the webhook gave such pods before (#69), a read-only hostPath.
    const before = structuredClone(out);
    (before.spec as PodSpec).volumes = [
      { name: PRELOAD.volume, hostPath: { path: '/opt/erdma-smcr/lib' } },
    ];
    expect(violations(before, BASELINE)).toEqual([`HostPath Volumes: ${PRELOAD.volume}`]);
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
    expect(r.warnings.map((w) => w.message).join(' ')).toMatch(
      /container\(s\) app comes from valueFrom/,
    );
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
    expect(spec(r.mutated!).containers[0]!.env).toEqual([
      { name: 'LD_PRELOAD', value: LIB },
      SELECT,
    ]);
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

describe('tcp2smc nodes where AF_SMC works: the preload library keeps the selection (#100)', () => {
  // What the agent labels an Alibaba Cloud Linux 3 node with the knob and AF_SMC (capability.ts).
  const alinux = view([
    node(
      'al3',
      '5.10.134-18.al8.x86_64',
      capable('preload'),
      'Alibaba Cloud Linux 3 (Soaring Falcon)',
    ),
  ]);

  it('gives an annotated pod the library and its selection there, by default', () => {
    const r = evaluate(pod(), alinux, config);
    const c = spec(r.mutated!).containers[0]!;
    expect(c.env).toEqual(
      expect.arrayContaining([
        { name: 'LD_PRELOAD', value: LIB },
        { name: SELECT_ENV, value: expect.stringMatching(/^nets=/) },
      ]),
    );
    expect(
      (r.mutated!.metadata as { annotations: Record<string, string> }).annotations[
        MECHANISM_ANNOTATION
      ],
    ).toBe('preload');
  });

  it('keeps the knob for a pod that asks for it, and warns that its selection is not kept', () => {
    const r = evaluate(pod({ annotations: { [MECHANISM_ANNOTATION]: 'tcp2smc' } }), alinux, config);
    expect(r.allowed).toBe(true);
    expect(spec(r.mutated!).containers[0]!.env).toBeUndefined();
    expect(
      (r.mutated!.metadata as { annotations: Record<string, string> }).annotations[
        MECHANISM_ANNOTATION
      ],
    ).toBe('tcp2smc');
    expect(r.warnings.map((w) => w.message).join('\n')).toMatch(
      /smcr\.erdma\.io\/mechanism: tcp2smc: .*every TCP connection of this pod uses SMC, its Internet ones too/,
    );
  });
});
