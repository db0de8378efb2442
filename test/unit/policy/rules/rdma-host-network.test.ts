// RDMA-aware admission (#24): pods that get an RDMA device for their own use (NCCL over eRDMA on
// GPU nodes, rdma/hca on Lingjun/SCC nodes) are warned without IPC_LOCK and, where the cluster
// does not enable RDMA for non-hostNetwork pods, refused rdma/hca without hostNetwork. SMC-R pods
// are not concerned: the kernel uses their device.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evaluate } from '../../../../src/policy/evaluate.js';
import type { JsonObject } from '../../../../src/policy/types.js';
import { runCli } from '../../../helpers/cli.js';
import { config, pod, view, workload } from '../../../helpers/policy.js';

const SMCR = 'network.alibabacloud.com/erdma-smcr';

function rdmaPod(
  opts: {
    resource?: string;
    hostNetwork?: boolean;
    caps?: string[];
    privileged?: boolean;
    smcr?: string;
  } = {},
): JsonObject {
  const p = pod({ spec: {} }) as {
    metadata: { annotations: Record<string, string> };
    spec: Record<string, unknown>;
  };
  if (opts.smcr === undefined) delete p.metadata.annotations[SMCR];
  else p.metadata.annotations[SMCR] = opts.smcr;
  const r = opts.resource ?? 'aliyun/erdma';
  p.spec.containers = [
    { name: 'sidecar', image: 'x' },
    {
      name: 'trainer',
      image: 'nccl',
      resources: { limits: { [r]: '1', 'nvidia.com/gpu': '8' }, requests: { [r]: '1' } },
      ...(opts.caps || opts.privileged
        ? {
            securityContext: {
              ...(opts.caps ? { capabilities: { add: opts.caps } } : {}),
              ...(opts.privileged ? { privileged: true } : {}),
            },
          }
        : {}),
    },
  ];
  if (opts.hostNetwork) p.spec.hostNetwork = true;
  return p as unknown as JsonObject;
}

describe('RDMA rules for pods that use the device themselves', () => {
  it('warns a GPU/NCCL pod whose RDMA container cannot lock memory, and only then', () => {
    const r = evaluate(rdmaPod({ hostNetwork: true }), view(), config);
    expect(r).toMatchObject({ allowed: true, untouched: false, smcr: false, patch: [] });
    expect(r.warnings).toEqual([
      {
        rule: 'rdma-ipc-lock',
        message: expect.stringMatching(
          /^RDMA without IPC_LOCK: .*add capability IPC_LOCK to trainer \(aliyun\/erdma\)$/,
        ),
      },
    ]);
    for (const fixed of [
      rdmaPod({ hostNetwork: true, caps: ['IPC_LOCK'] }),
      rdmaPod({ hostNetwork: true, caps: ['NET_ADMIN', 'CAP_IPC_LOCK'] }),
      rdmaPod({ privileged: true }),
    ]) {
      expect(evaluate(fixed, view(), config)).toMatchObject({
        allowed: true,
        untouched: true,
        warnings: [],
      });
    }
  });

  it('with several RDMA containers, warns only when none can lock memory, and names every one', () => {
    const twoUsers = (lockFirst: boolean, lockSecond: boolean): JsonObject => {
      const p = rdmaPod({ hostNetwork: true }) as { spec: { containers: JsonObject[] } };
      const lock = (yes: boolean) =>
        yes ? { securityContext: { capabilities: { add: ['IPC_LOCK'] } } } : {};
      p.spec.containers = [
        {
          name: 'worker-a',
          image: 'x',
          resources: { limits: { 'aliyun/erdma': '1' } },
          ...lock(lockFirst),
        },
        {
          name: 'worker-b',
          image: 'x',
          resources: { limits: { 'rdma/hca': '1' } },
          ...lock(lockSecond),
        },
      ];
      return p as unknown as JsonObject;
    };
    expect(evaluate(twoUsers(false, false), view(), config).warnings).toEqual([
      {
        rule: 'rdma-ipc-lock',
        message: expect.stringMatching(
          /add capability IPC_LOCK to worker-a \(aliyun\/erdma\), worker-b \(rdma\/hca\)$/,
        ),
      },
    ]);
    for (const [a, b] of [
      [true, false],
      [false, true],
    ] as const) {
      expect(
        evaluate(twoUsers(a, b), view(), config)
          .warnings.map((w) => w.message)
          .join(),
      ).not.toMatch(/IPC_LOCK/);
    }
  });

  it('refuses rdma/hca without hostNetwork where the cluster does not enable RDMA for such pods, with the fix', () => {
    const p = rdmaPod({ resource: 'rdma/hca', caps: ['IPC_LOCK'] });
    const r = evaluate(p, view(undefined, { rdmaNonHostNetwork: false }), config);
    expect(r.allowed).toBe(false);
    expect(r.denials).toEqual([
      {
        rule: 'rdma-host-network',
        path: 'spec.containers[1].resources.limits',
        message: expect.stringMatching(
          /Set hostNetwork: true, or enable the cluster option "RDMA for non-hostNetwork pods".*rdmaNonHostNetwork: true/,
        ),
      },
    ]);
    expect(evaluate(p, view(undefined, { rdmaNonHostNetwork: true }), config).allowed).toBe(true);
    expect(evaluate(p, view(), config).allowed).toBe(true); // not known: not checked
    expect(
      evaluate(
        rdmaPod({ resource: 'rdma/hca', caps: ['IPC_LOCK'], hostNetwork: true }),
        view(undefined, { rdmaNonHostNetwork: false }),
        config,
      ).allowed,
    ).toBe(true);
  });

  it('applies to pod templates and to pods with SMC-R turned off; not to SMC-R pods', () => {
    const w = workload(
      'Deployment',
      { containers: [{ name: 'c', image: 'x', resources: { limits: { 'rdma/hca': 1 } } }] },
      {},
    );
    const r = evaluate(w, view(undefined, { rdmaNonHostNetwork: false }), config);
    expect(r.denials.map((d) => d.path)).toEqual([
      'spec.template.spec.containers[0].resources.limits',
    ]);
    expect(
      evaluate(
        rdmaPod({ resource: 'rdma/hca', smcr: 'false' }),
        view(undefined, { rdmaNonHostNetwork: false }),
        config,
      ).allowed,
    ).toBe(false);
    const smcr = evaluate(rdmaPod({ smcr: 'true' }), view(), config);
    expect(smcr.warnings.map((w) => w.message).join()).not.toMatch(/IPC_LOCK/);
  });

  it('a pod with zero devices, or none at all, is untouched', () => {
    const p = rdmaPod() as {
      spec: { containers: { resources?: { limits: Record<string, string> } }[] };
    };
    p.spec.containers[1]!.resources!.limits['aliyun/erdma'] = '0';
    delete (p.spec.containers[1]!.resources as { requests?: unknown }).requests;
    expect(evaluate(p as unknown as JsonObject, view(), config)).toMatchObject({ untouched: true });
  });
});

describe('the same rules in check', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rdma-check-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('denies by the profile and warns, with the rule named', async () => {
    writeFileSync(
      join(dir, 'profile.yaml'),
      'driverMode: default\nipFamilies: [IPv4]\nrdmaNonHostNetwork: false\n',
    );
    writeFileSync(join(dir, 'pod.json'), JSON.stringify(rdmaPod({ resource: 'rdma/hca' })));
    const r = await runCli([
      'check',
      '--profile',
      join(dir, 'profile.yaml'),
      join(dir, 'pod.json'),
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/DENY .*\n.*\[rdma-host-network\] rdma\/hca needs hostNetwork: true/);
    expect(r.stdout).toMatch(/warning: \[rdma-ipc-lock\] RDMA without IPC_LOCK/);
  });
});
