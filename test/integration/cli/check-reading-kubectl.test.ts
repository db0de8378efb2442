// What `check` reads, against what kubectl reads: symlinks (and a symlink cycle), dot-directories,
// typed Lists, kinds we do not know that carry a pod template, and a bad file among good ones in
// every output format. Each case is a DaemonSet-like object with the annotation and hostNetwork,
// which must be denied: a manifest kubectl applies must never pass unchecked.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBECTL, kubectlMissing } from '../../harness/k8s/control-plane.js';
import {
  check,
  removeCheckTrees,
  write,
  writeCheckTrees,
  type CheckTrees,
  type JsonReport,
} from '../../helpers/check-trees.js';
import { requires } from '../../helpers/requires.js';

let trees: CheckTrees;
let root: string;
let tree: string;
beforeAll(() => {
  trees = writeCheckTrees();
  ({ root, tree } = trees);
});
afterAll(() => removeCheckTrees(trees));

const why = requires("check's reading against kubectl 1.37", kubectlMissing);

describe.skipIf(why !== '')('check reads what kubectl reads', () => {
  it('finds the same objects as kubectl 1.37 -R in that tree', async () => {
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
