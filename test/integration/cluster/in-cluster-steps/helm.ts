// #87 item 4: the Helm chart on the in-cluster suite's 1.37 cluster, as the kustomize runbooks are
// run there: a bad value fails before anything is created; `helm install` as the README says (our
// image from the node's containerd, and the test node's host paths through a post-renderer:
// ../helm-plugins/test-node); `helm upgrade` to a new image tag and a changed value under a
// stream of annotated pods (none failed, none admitted unmutated, every component on the new
// tag); `helm rollback`; `helm uninstall` leaving exactly what the uninstall runbook lists.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { expect } from 'vitest';
import { binPath, KUBECTL } from '../../../harness/k8s/control-plane.js';
import { CHART, HELM_INSTALL, HELM_UNINSTALL, helmEnv } from '../../../harness/helm.js';
import { NODE, type InCluster } from './context.js';
import {
  annotatedPodRuns,
  imagesByComponent,
  replaceDevicePluginPod,
  uninstalledAsTheRunbookSays,
  webhookAnswers,
} from './day-two.js';
import { admissionLoadDuring, webhookErrors } from './rollouts.js';

const IMAGE = 'localhost/erdma-smcr';
const RELEASE = 'erdma-smcr';
const TEST_NODE = [
  '--post-renderer',
  'test-node',
  '--post-renderer-args',
  KUBECTL,
  '--post-renderer-args',
  resolve('test/integration/cluster/in-cluster'),
];

export async function helmRunbooks(c: InCluster, conflistBefore: string): Promise<void> {
  const helm = (...args: string[]) => {
    // In the cluster's network namespace, where its API server listens (as cp.kubectl runs).
    const r = spawnSync(
      'nsenter',
      [`--net=${c.cp.netns}`, binPath('helm'), ...args, '--kubeconfig', c.cp.kubeconfig],
      {
        encoding: 'utf8',
        timeout: 300_000,
        env: helmEnv({ HELM_PLUGINS: resolve('test/integration/cluster/helm-plugins') }),
      },
    );
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const ok = (...args: string[]): string => {
    const r = helm(...args);
    expect(r.status, `helm ${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
    return r.stdout;
  };
  const rolled = async (): Promise<void> => {
    await c.rolledOut('daemonset', 'erdma-smcr-agent');
    await c.rolledOut('deployment', 'erdma-smcr-webhook');
    await replaceDevicePluginPod(c); // OnDelete: the runbook deletes its pod node by node
    await c.until('no old pod of ours left', async () => {
      const pods = (await c.getJson('pods', '-n', 'erdma-smcr')).items;
      return pods.every((p) => !p.metadata.deletionTimestamp) ? true : undefined;
    });
  };
  const all = (tag: string) => ({
    agent: [`${IMAGE}:${tag}`],
    'device-plugin': [`${IMAGE}:${tag}`],
    webhook: [`${IMAGE}:${tag}`],
  });
  const agentLogLevel = async (): Promise<string | undefined> =>
    (
      (await c.getJson('daemonset', '-n', 'erdma-smcr', 'erdma-smcr-agent')).spec.template.spec
        .containers[0].env as { name: string; value?: string }[]
    ).find((e) => e.name === 'ERDMA_SMCR_LOG_LEVEL')?.value;

  // 1. A bad value: refused by the chart's schema before anything reaches the cluster.
  const chart = CHART;
  const install = HELM_INSTALL;
  const image = [
    '--set',
    `image.repository=${IMAGE}`,
    '--set',
    'image.tag=test',
    '--set',
    'image.pullPolicy=Never',
  ];
  const bad = helm(...install, ...image, ...TEST_NODE, '--set', 'webhook.failurePolicy=Fial');
  expect(bad.status).not.toBe(0);
  console.log(`helm install --set webhook.failurePolicy=Fial:\n${bad.stderr.trim()}`);
  expect(bad.stderr).toContain(
    "at '/webhook/failurePolicy': value must be one of '', 'Ignore', 'Fail'",
  );
  expect((await c.cp.kubectl(['get', 'namespace', 'erdma-smcr'])).status).not.toBe(0);
  expect(ok('list', '--all-namespaces', '-q').trim()).toBe('');
  const typo = helm(...install, ...image, ...TEST_NODE, '--set', 'webhok.timeoutSeconds=3');
  expect(typo.stderr).toContain("additional properties 'webhok' not allowed");
  expect(
    (await c.cp.kubectl(['get', 'mutatingwebhookconfiguration', 'erdma-smcr'])).status,
  ).not.toBe(0);

  // 2. Install, as the README says (plus this node's image and host paths): the eRDMA node
  // labelled again (the kustomize uninstall before took the label off), then helm install.
  await c.kubectl('label', 'node', NODE, 'smcr.erdma.io/erdma-node=true', '--overwrite');
  const notes = ok(...install, ...image, ...TEST_NODE);
  expect(notes).toContain('kubectl get nodes -L smcr.erdma.io/capable,smcr.erdma.io/reason');
  await rolled();
  await webhookAnswers(c);
  expect(await imagesByComponent(c)).toEqual(all('test'));
  await annotatedPodRuns(c, 'helm-installed');

  // 3. Upgrade to a new tag and a changed value under a stream of annotated pods.
  c.node.containerd.ctr(['images', 'tag', '--force', `${IMAGE}:test`, `${IMAGE}:next`]);
  const load = await admissionLoadDuring(c, 20, async () => {
    ok(
      'upgrade',
      RELEASE,
      chart,
      '--namespace',
      'erdma-smcr',
      '--reuse-values',
      '--set',
      'image.tag=next',
      '--set',
      'logLevel=debug',
      ...TEST_NODE,
    );
    await rolled();
  });
  console.log(
    `helm upgrade under load: ${load.sent} annotated pods in ${load.seconds.toFixed(1)} s: ${load.mutated} mutated, ${load.missed} admitted unmutated, ${load.failed} failed`,
  );
  expect(load.sent).toBeGreaterThan(100);
  expect(load.failed, load.failed ? webhookErrors(c) : '').toBe(0);
  expect(load.missed, load.missed ? `${load.missedNames.join(' ')}\n${webhookErrors(c)}` : '').toBe(
    0,
  );
  expect(await imagesByComponent(c)).toEqual(all('next'));
  expect(await agentLogLevel()).toBe('debug');
  await annotatedPodRuns(c, 'helm-upgraded');

  // 4. Roll back to the installed revision.
  ok('rollback', RELEASE, '1', '--namespace', 'erdma-smcr');
  await rolled();
  expect(await imagesByComponent(c)).toEqual(all('test'));
  expect(await agentLogLevel()).toBeUndefined();
  await webhookAnswers(c);
  await annotatedPodRuns(c, 'helm-rolled-back');
  const history = ok('history', RELEASE, '--namespace', 'erdma-smcr', '-o', 'json');
  expect(
    (JSON.parse(history) as { revision: number; status: string }[]).map((h) => [
      h.revision,
      h.status,
    ]),
  ).toEqual([
    [1, 'superseded'],
    [2, 'superseded'],
    [3, 'deployed'],
  ]);

  // 5. Uninstall as the runbook says: helm uninstall, and the namespace helm created.
  await uninstalledAsTheRunbookSays(c, conflistBefore, async () => {
    ok(...HELM_UNINSTALL);
    await c.kubectl('delete', 'ns', 'erdma-smcr', '--wait=false');
  });
  expect(ok('list', '--all-namespaces', '-q').trim()).toBe('');
}
