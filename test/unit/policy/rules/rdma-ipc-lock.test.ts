// The rdma-ipc-lock rule (src/policy/rules/rdma-ipc-lock.ts): its warning carries its id.
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../../src/policy/evaluate.js';
import type { JsonObject } from '../../../../src/policy/types.js';
import { config, view } from '../../../helpers/policy.js';

/** A GPU pod for NCCL over eRDMA: the device, no SMC-R annotation. */
const withDevice = (caps?: string[]): JsonObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'nccl', namespace: 'default' },
  spec: {
    hostNetwork: true,
    containers: [
      {
        name: 'nccl',
        image: 'x',
        resources: { limits: { 'aliyun/erdma': '1' } },
        ...(caps ? { securityContext: { capabilities: { add: caps } } } : {}),
      },
    ],
  },
});

describe('rule rdma-ipc-lock', () => {
  it('warns, under its own id, an RDMA pod whose containers cannot lock memory', () => {
    const r = evaluate(withDevice(), view(), config);
    expect(r.allowed).toBe(true);
    expect(r.warnings).toEqual([
      { rule: 'rdma-ipc-lock', message: expect.stringMatching(/RDMA without IPC_LOCK/) },
    ]);
  });

  it('says nothing when the container adds IPC_LOCK', () => {
    expect(evaluate(withDevice(['IPC_LOCK']), view(), config).warnings).toEqual([]);
  });
});
