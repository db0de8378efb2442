// The trees `check` and kubectl both read (symlinks, dot-directories, typed Lists, .git) and the
// hostile ones only we read, each case a DaemonSet-like object with the annotation and
// hostNetwork, which must be denied. Shared by the offline suite and the kubectl comparison.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './cli.js';

export const template = {
  metadata: {
    annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
    labels: { app: 'agent' },
  },
  spec: { hostNetwork: true, containers: [{ name: 'app', image: 'busybox' }] },
};
export const daemonSet = (name: string): object => ({
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name, namespace: 'default' },
  spec: { selector: { matchLabels: { app: 'agent' } }, template },
});

export interface CheckTrees {
  readonly root: string;
  /** What kubectl can read too. */
  readonly tree: string;
  /** Cases only we read: a cycle, a bad file, a kind kubectl does not know. */
  readonly hostile: string;
}

export function write(path: string, content: unknown): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
}

/** Writes both trees below a new temp dir (removeCheckTrees removes it). */
export function writeCheckTrees(): CheckTrees {
  const root = mkdtempSync(join(tmpdir(), 'check-reading-'));
  const tree = join(root, 'tree');
  const hostile = join(root, 'hostile');
  write(join(root, 'real/ds.yaml'), daemonSet('linked'));
  mkdirSync(tree, { recursive: true });
  symlinkSync('../real/ds.yaml', join(tree, 'linked.yaml'));
  write(join(tree, '.k8s/ds.yaml'), daemonSet('in-dot-dir'));
  write(join(tree, '.hidden.yaml'), daemonSet('dot-file'));
  write(join(tree, 'list.json'), {
    apiVersion: 'apps/v1',
    kind: 'DaemonSetList',
    items: [
      {
        metadata: { name: 'from-list', namespace: 'default' },
        spec: (daemonSet('from-list') as { spec: unknown }).spec,
      },
    ],
  });
  write(join(tree, '.git/ds.yaml'), daemonSet('in-git'));

  write(join(hostile, 'a/ds.yaml'), daemonSet('in-a'));
  symlinkSync('..', join(hostile, 'a/loop'));
  write(
    join(hostile, 'b/bad.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\n  labels: [unclosed\n',
  );
  write(join(hostile, 'c/rollout.yaml'), {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'rollout', namespace: 'default' },
    spec: { template },
  });
  write(join(hostile, 'c/odd.yaml'), {
    apiVersion: 'example.com/v1',
    kind: 'Odd',
    metadata: { name: 'odd', namespace: 'default' },
    spec: { pods: [{ metadata: template.metadata }] },
  });
  return { root, tree, hostile };
}

export const removeCheckTrees = (t: CheckTrees): void =>
  rmSync(t.root, { recursive: true, force: true });

export interface JsonReport {
  results: {
    source: string;
    kind: string;
    name: string;
    allowed: boolean;
    denials: { rule: string }[];
    warnings: { rule: string; message: string }[];
  }[];
  errors: { source: string; code: string; message: string }[];
  summary: { objects: number; denied: number; errors: number };
}

export async function check(dir: string, format = 'json') {
  return runCli(['check', '-o', format, dir]);
}
