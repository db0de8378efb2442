// Acting as the container runtime for a pod the CNI plugin never saw (it was not chained when the
// pod started): find the pod's live network namespace and run our plugin's ADD in it, then clean
// up the records of such applies once their pods leave the node.
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { NativeBinary } from '../../native/binary.js';
import type { NodePod } from '../pod.js';
import { pluginEntry, PLUGIN_TYPE, type PluginEntryOptions } from './cni-install.js';

/** Container ID the agent's late apply records under (a runtime never uses it). */
export const LATE_PREFIX = 'late-';

/**
 * Removes the records of late applies for pods that left this node. The runtime's DEL for such a
 * pod names its real sandbox, never `late-<uid>`, so nothing else would ever remove them. Only
 * records older than `olderThanMs` go (a pass never races a record being written). Returns the
 * removed file names.
 */
export function removeLateRecords(
  stateDir: string,
  live: ReadonlySet<string>,
  olderThanMs: number,
): string[] {
  if (!existsSync(stateDir)) return [];
  const removed: string[] = [];
  for (const f of readdirSync(stateDir)) {
    // <containerId>_<ifname>.json, the plugin's record name (native/src/cni.c)
    const sep = f.lastIndexOf('_');
    const uid =
      f.startsWith(LATE_PREFIX) && f.endsWith('.json') && sep > LATE_PREFIX.length
        ? f.slice(LATE_PREFIX.length, sep)
        : '';
    if (uid === '' || live.has(uid)) continue;
    const path = join(stateDir, f);
    try {
      if (statSync(path).mtimeMs >= olderThanMs) continue;
      rmSync(path);
      removed.push(f);
    } catch {
      // gone already
    }
  }
  return removed;
}

export interface LateApplyOptions extends PluginEntryOptions {
  readonly binary: NativeBinary;
}

/**
 * Runs our CNI plugin's ADD against the pod's live netns, as the runtime would have: the same
 * code applies the same settings and writes the same record. Resolves with why it failed, or
 * undefined when it succeeded.
 */
export async function lateApply(
  pod: NodePod,
  netns: string,
  o: LateApplyOptions,
): Promise<string | undefined> {
  const md = pod.metadata ?? {};
  const conf = {
    cniVersion: '1.0.0',
    name: 'erdma-smcr-late',
    ...pluginEntry(o),
    type: PLUGIN_TYPE,
    runtimeConfig: { 'io.kubernetes.cri.pod-annotations': md.annotations ?? {} },
    prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: netns }], ips: [] },
  };
  const env = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: `${LATE_PREFIX}${md.uid ?? 'unknown'}`,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: `K8S_POD_NAMESPACE=${md.namespace ?? ''};K8S_POD_NAME=${md.name ?? ''};K8S_POD_UID=${md.uid ?? ''};IgnoreUnknown=1`,
  };
  try {
    const r = await o.binary.cni(env, conf);
    if (r.exitCode === 0) return undefined;
    return `${r.stderr.trim()} ${r.stdout.trim()}`.trim() || `exit code ${r.exitCode}`;
  } catch (err) {
    return (err as Error).message;
  }
}
