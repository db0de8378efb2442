// RDMA-aware rules for pods that get an RDMA device some other way than SMC-R: GPU pods that ask
// for aliyun/erdma for NCCL, and pods on Lingjun/SCC nodes that ask for the shared rdma/hca. They
// apply to every pod that requests such a resource and does not turn SMC-R on (an SMC-R pod's
// device is used by the kernel, which needs no memory lock and no hostNetwork).
import type { PolicyConfig } from '../config/schema.js';
import { arrayOf, isObject } from '../util/json.js';
import { deviceCount } from './devices.js';
import { hcaWithoutHostNetwork } from './rules/rdma-host-network.js';
import type { ClusterView, Denial, PodLocation, Warning } from './types.js';

export interface RdmaOutcome {
  readonly denials: Denial[];
  readonly warnings: Warning[];
}

/** Containers (by name) that get at least one device of any of the resources. */
function containersWithDevices(
  loc: PodLocation,
  resources: readonly string[],
): { index: number; field: 'containers' | 'initContainers'; name: string; resource: string }[] {
  const out: {
    index: number;
    field: 'containers' | 'initContainers';
    name: string;
    resource: string;
  }[] = [];
  for (const field of ['initContainers', 'containers'] as const) {
    arrayOf(loc.spec[field]).forEach((c, index) => {
      if (!isObject(c) || !isObject(c.resources)) return;
      const limits = isObject(c.resources.limits) ? c.resources.limits : {};
      const requests = isObject(c.resources.requests) ? c.resources.requests : {};
      const resource = resources.find(
        (r) => (deviceCount(limits[r]) ?? deviceCount(requests[r]) ?? 0) > 0,
      );
      if (resource)
        out.push({
          index,
          field,
          name: typeof c.name === 'string' ? c.name : `#${index}`,
          resource,
        });
    });
  }
  return out;
}

/** IPC_LOCK among the added capabilities, or privileged (which has every capability). */
function canLockMemory(container: unknown): boolean {
  if (!isObject(container) || !isObject(container.securityContext)) return false;
  const sc = container.securityContext;
  if (sc.privileged === true) return true;
  const add = isObject(sc.capabilities) ? arrayOf(sc.capabilities.add) : [];
  return add.some((c) => c === 'IPC_LOCK' || c === 'CAP_IPC_LOCK' || c === 'ALL');
}

const resourceLists = new WeakMap<PolicyConfig, readonly string[]>();

/** aliyun/erdma and the configured RDMA resources (computed once per configuration). */
function rdmaResourcesOf(config: PolicyConfig): readonly string[] {
  let list = resourceLists.get(config);
  if (!list)
    resourceLists.set(
      config,
      (list = [
        config.resourceName,
        ...config.rdmaResources.filter((r) => r !== config.resourceName),
      ]),
    );
  return list;
}

function mentions(res: unknown, resources: readonly string[]): boolean {
  if (!isObject(res)) return false;
  for (const r of resources) if (r in res) return true;
  return false;
}

/**
 * Whether any container names an RDMA resource at all: the check every pod without the SMC-R
 * annotation pays, so it allocates nothing.
 */
export function mayUseRdma(loc: PodLocation, config: PolicyConfig): boolean {
  const resources = rdmaResourcesOf(config);
  for (const field of ['containers', 'initContainers'] as const) {
    const list = loc.spec[field];
    if (!Array.isArray(list)) continue;
    for (const c of list) {
      if (!isObject(c) || !isObject(c.resources)) continue;
      if (mentions(c.resources.limits, resources) || mentions(c.resources.requests, resources))
        return true;
    }
  }
  return false;
}

/** The rules, for a pod that does not ask for SMC-R. */
export function rdmaRules(loc: PodLocation, view: ClusterView, config: PolicyConfig): RdmaOutcome {
  const out: RdmaOutcome = { denials: [], warnings: [] };
  if (!mayUseRdma(loc, config)) return out;
  const users = containersWithDevices(loc, rdmaResourcesOf(config));
  if (users.length === 0) return out;
  const unlocked = users.filter((u) => !canLockMemory(arrayOf(loc.spec[u.field])[u.index]));
  if (unlocked.length === users.length) {
    const names = unlocked.map((u) => `${u.name} (${u.resource})`).join(', ');
    // Short: the API server cuts warnings at 120 characters, so the names come last.
    out.warnings.push({
      rule: 'rdma-ipc-lock',
      message: `RDMA without IPC_LOCK: memory registration fails at the default memlock limit; add capability IPC_LOCK to ${names}`,
    });
  }
  const hca = users.find((u) => u.resource === config.hcaResource);
  const denial =
    hca &&
    hcaWithoutHostNetwork(
      loc,
      view,
      config,
      `${loc.prefix}spec.${hca.field}[${hca.index}].resources.limits`,
    );
  if (denial) out.denials.push(denial);
  return out;
}
