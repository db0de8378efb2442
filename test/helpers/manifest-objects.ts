// Objects of a shipped manifest file by kind, as YAML for `kubectl apply -f -`: a test that needs
// the agent's identity (its ServiceAccount and RBAC, in manifests/base/agent.yaml beside its
// DaemonSet) applies those and not the workload.
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';

export const RBAC_KINDS = [
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
];

export function objectsOf(file: string, kinds: readonly string[]): string {
  const docs = (yaml.loadAll(readFileSync(file, 'utf8')) as ({ kind?: string } | null)[]).filter(
    (d): d is { kind: string } => !!d && kinds.includes(d.kind ?? ''),
  );
  if (docs.length === 0) throw new Error(`${file} has no ${kinds.join(', ')}`);
  return docs.map((d) => yaml.dump(d)).join('---\n');
}
