// What `check` reads, against what kubectl reads: symlinks (and a symlink cycle), dot-directories,
// typed Lists, kinds we do not know that carry a pod template, and a bad file among good ones in
// every output format. Each case is a DaemonSet-like object with the annotation and hostNetwork,
// which must be denied: a manifest kubectl applies must never pass unchecked.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBECTL, kubectlMissing } from '../../harness/k8s/control-plane.js';
import { runCli } from '../../helpers/cli.js';
import { requires } from '../../helpers/requires.js';

const template = {
  metadata: {
    annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
    labels: { app: 'agent' },
  },
  spec: { hostNetwork: true, containers: [{ name: 'app', image: 'busybox' }] },
};
const daemonSet = (name: string): object => ({
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name, namespace: 'default' },
  spec: { selector: { matchLabels: { app: 'agent' } }, template },
});

let root: string;
let tree: string; // what kubectl can read too
let hostile: string; // cases only we read: a cycle, a bad file, a kind kubectl does not know

function write(path: string, content: unknown): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'check-reading-'));
  tree = join(root, 'tree');
  hostile = join(root, 'hostile');
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
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface JsonReport {
  results: {
    source: string;
    kind: string;
    name: string;
    allowed: boolean;
    denials: { rule: string }[];
    warnings: string[];
  }[];
  errors: { source: string; code: string; message: string }[];
  summary: { objects: number; denied: number; errors: number };
}

async function check(dir: string, format = 'json') {
  return runCli(['check', '-o', format, dir]);
}

const why = requires("check's reading against Debian's kubectl", kubectlMissing);

describe.skipIf(why !== '')('check reads what kubectl reads', () => {
  it("finds the same objects as Debian's kubectl -R in that tree", async () => {
    const k = spawnSync(KUBECTL, ['annotate', '--local', '-R', '-f', tree, 'x=y', '-o', 'name'], {
      encoding: 'utf8',
    });
    const kubectlNames = k.stdout.trim().split('\n').filter(Boolean).sort();
    const ours = (JSON.parse((await check(tree)).stdout) as JsonReport).results
      .map((x) => `daemonset.apps/${x.name}`)
      .sort();
    // kubectl reads .git too; skipping it is our one documented difference.
    expect(kubectlNames.filter((n) => n !== 'daemonset.apps/in-git')).toEqual(ours);
  });

  it('reads a repeated key as kubectl does: the last value wins', () => {
    const dir = join(root, 'dup-kubectl');
    write(
      join(dir, 'pod.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: dup\n  annotations:\n    network.alibabacloud.com/erdma-smcr: "true"\nspec:\n  hostNetwork: false\n  hostNetwork: true\n  containers: [{name: a, image: b}]\n',
    );
    const k = spawnSync(
      KUBECTL,
      ['annotate', '--local', '-f', join(dir, 'pod.yaml'), 'x=y', '-o', 'json'],
      { encoding: 'utf8' },
    );
    expect((JSON.parse(k.stdout) as { spec: { hostNetwork: boolean } }).spec.hostNetwork).toBe(
      true,
    );
  });
});
