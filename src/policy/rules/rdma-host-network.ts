// rdma-host-network: a pod that gets the shared rdma/hca device without SMC-R needs hostNetwork,
// unless the cluster enables RDMA for non-hostNetwork pods. Judged with the other RDMA checks
// (../rdma.ts), for pods that do not turn SMC-R on.
import type { PolicyConfig } from '../../config/schema.js';
import type { ClusterView, Denial, PodLocation } from '../types.js';
import type { Rule } from './rule.js';

export const rdmaHostNetwork: Rule = {
  id: 'rdma-host-network',
  scope: 'rdma',
  when: 'a container gets `rdma/hca` (`policy.hcaResource`), the pod is not `hostNetwork`, and the cluster profile says `rdmaNonHostNetwork: false` (the cluster\'s "RDMA for non-hostNetwork pods" option, which needs an IPv6 cluster, is off)',
  fix: '`hostNetwork: true`, or turn the option on and set `rdmaNonHostNetwork: true` in the profile',
  example: 'examples/invalid/rdma-host-network.yaml',
};

/** The denial for the container at `path` that gets the hca resource, when the cluster refuses it. */
export function hcaWithoutHostNetwork(
  loc: PodLocation,
  view: ClusterView,
  config: PolicyConfig,
  path: string,
): Denial | undefined {
  if (loc.spec.hostNetwork === true || view.rdmaNonHostNetwork !== false) return undefined;
  return {
    rule: 'rdma-host-network',
    path,
    message:
      `${config.hcaResource} needs hostNetwork: true in this cluster, which does not enable RDMA for non-hostNetwork pods. ` +
      'Set hostNetwork: true, or enable the cluster option "RDMA for non-hostNetwork pods" (it needs an IPv6 cluster) and set rdmaNonHostNetwork: true in the cluster profile.',
  };
}
