// rdma-ipc-lock: a pod that gets an RDMA device for its own use (NCCL over eRDMA, rdma/hca) registers
// memory with it, which fails at the default memlock limit unless a container can lock memory.
// A warning (the pod may raise its limit another way), judged with the other RDMA checks (../rdma.ts).
import type { Rule } from './rule.js';

export const rdmaIpcLock: Rule = {
  id: 'rdma-ipc-lock',
  scope: 'rdma',
  when: 'never: it warns when no container that gets an RDMA device (`aliyun/erdma` without SMC-R, `rdma/hca`) can lock memory (`IPC_LOCK` among its added capabilities, or privileged)',
  fix: 'add the capability `IPC_LOCK` to the containers that use the device',
  example: 'examples/warned/rdma-ipc-lock.yaml',
};
