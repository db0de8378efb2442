// Day two on the harness (#80 items 1 and 4): a webhook outage stalls no update of an annotated
// pod, and the runbooks of docs/install.md (upgrade, roll back, uninstall) run as written, each
// command against the cluster.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { expect } from 'vitest';
import { podWebhookCalled, type Json } from '../../../helpers/cel.js';
import { agentPodNames, APP, CONFLIST, HOST, NODE, type InCluster, type Obj } from './context.js';

const NS = 'apps';
const SMCR = 'network.alibabacloud.com/erdma-smcr';
const IMAGE = 'localhost/erdma-smcr';

const annotatedPod = (name: string): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS, annotations: { [SMCR]: 'true' } },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'app', image: APP, imagePullPolicy: 'Never' }],
  },
});

/**
 * Until the API server's own call reaches the webhook: a server-side dry run of an annotated pod
 * comes back mutated. A Deployment's available replicas are not enough after an outage: the API
 * server dials the Service's ClusterIP, which routes to the new pods only once kube-proxy has
 * synced their endpoints, and under `Ignore` a pod created in that gap is admitted unmutated (a
 * fresh-clone CI run met it: `resources.limits` undefined right after the rollout).
 */
export async function webhookAnswers(c: InCluster): Promise<void> {
  await c.until(
    'the webhook answering the API server through its Service',
    async () => {
      const r = await c.cp.kubectl(
        ['create', '--dry-run=server', '-o', 'json', '-f', '-'],
        JSON.stringify(annotatedPod('probe')),
      );
      if (r.status !== 0) return undefined;
      const p = JSON.parse(r.stdout) as Obj;
      return p.spec.containers[0].resources?.limits?.['aliyun/erdma'] ? true : undefined;
    },
    120_000,
  );
}

/** An annotated pod created now runs, mutated, with its device: the whole path works. */
export async function annotatedPodRuns(c: InCluster, name: string): Promise<void> {
  const created = await c.cp.kubectl(['create', '-f', '-'], JSON.stringify(annotatedPod(name)));
  expect(created.status, created.stderr).toBe(0);
  const pod = await c.until(
    `${name} Running`,
    async () => {
      const p = await c.getJson('pod', '-n', NS, name);
      return p.status.phase === 'Running' ? p : undefined;
    },
    120_000,
  );
  expect(pod.spec.containers[0].resources.limits['aliyun/erdma']).toBe('1');
  expect(pod.metadata.annotations?.['smcr.erdma.io/settings']).toMatch(/"version":1/);
  await c.kubectl('delete', 'pod', '-n', NS, name, '--wait=false');
}

/**
 * #80 item 1, on the real overlay (#84). The fail-closed pod webhook of
 * manifests/overlays/match-conditions lets only the creation of an annotated pod, and an update of
 * our own keys, wait on the webhook. The negative control first: the base's rules failing closed
 * without matchConditions refuse a plain label update of an annotated pod. Then the overlay's own
 * matchConditions and failurePolicy (rendered by kubectl's kustomize from the overlay) are put on
 * the installed webhook, and the 1.37 API server evaluates their CEL itself: labels, the Job
 * controller's finalizer removal and the garbage collector's patch go through, a change of our
 * tuning key and the creation of an annotated pod are refused, an unannotated pod is created.
 */
export async function outageStallsOnlyCreation(c: InCluster, overlay: string): Promise<void> {
  const { cp, kubectl, getJson, until, rolledOut } = c;
  const rendered = yaml.loadAll(
    await kubectl('kustomize', 'manifests/overlays/match-conditions'),
  ) as Obj[];
  const shipped = (
    rendered.find((o) => o.kind === 'MutatingWebhookConfiguration') as unknown as {
      webhooks: { name: string; failurePolicy: string; matchConditions: unknown[] }[];
    }
  ).webhooks[0]!;
  expect(shipped.name).toBe('pods.smcr.erdma.io');
  expect(shipped.failurePolicy).toBe('Fail');
  const job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'outage', namespace: NS },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { annotations: { [SMCR]: 'true' } },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          containers: [
            { name: 'app', image: APP, imagePullPolicy: 'Never', command: ['/bin/sleep', '25'] },
          ],
        },
      },
    },
  };
  const made = await cp.kubectl(['create', '-f', '-'], JSON.stringify(job));
  expect(made.status, made.stderr).toBe(0);
  const podName = await until(
    "the Job's pod Running",
    async () => {
      const [p] = (await getJson('pods', '-n', NS, '-l', 'job-name=outage')).items;
      return p?.status.phase === 'Running' ? p.metadata.name : undefined;
    },
    120_000,
  );
  const patchWebhook = (ops: object[]): Promise<string> =>
    kubectl(
      'patch',
      'mutatingwebhookconfiguration',
      'erdma-smcr',
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'test', path: '/webhooks/0/name', value: 'pods.smcr.erdma.io' },
        ...ops,
      ]),
    );
  try {
    // As the fail-closed configuration stood when #80 was filed: CREATE and UPDATE, Fail.
    await patchWebhook([{ op: 'replace', path: '/webhooks/0/failurePolicy', value: 'Fail' }]);
    await kubectl('scale', '-n', 'erdma-smcr', 'deploy/erdma-smcr-webhook', '--replicas=0');
    // Gone, not only out of the Endpoints: a stopping webhook keeps serving for 5 s after SIGTERM
    // (ERDMA_SMCR_SHUTDOWN_DELAY_MS), while kube-proxy catches up.
    await until(
      'no webhook pod and no endpoint left',
      async () => {
        const pods = await getJson(
          'pods',
          '-n',
          'erdma-smcr',
          '-l',
          'app.kubernetes.io/component=webhook',
        );
        const ep = await getJson('endpoints', '-n', 'erdma-smcr', 'erdma-smcr-webhook');
        const subsets = (ep.subsets ?? []) as { addresses?: unknown[] }[];
        return pods.items.length === 0 && subsets.every((s) => !s.addresses?.length)
          ? true
          : undefined;
      },
      120_000,
    );
    const refused = await cp.kubectl(['label', 'pod', '-n', NS, podName, 'team=a']);
    expect(
      refused.status,
      'kubectl label while the webhook is down, UPDATE failing closed',
    ).not.toBe(0);
    expect(refused.stderr).toMatch(/failed calling webhook/);
    console.log(`outage, UPDATE failing closed: kubectl label refused: ${refused.stderr.trim()}`);

    // The overlay's matchConditions, evaluated by the API server.
    await patchWebhook([
      { op: 'add', path: '/webhooks/0/matchConditions', value: shipped.matchConditions },
    ]);
    const relabel = await cp.kubectl(['label', 'pod', '-n', NS, podName, 'team=a']);
    expect(relabel.status, relabel.stderr).toBe(0);
    const after = await getJson('pod', '-n', NS, podName);
    expect(after.metadata.labels?.['team']).toBe('a');
    console.log(`outage, the overlay's matchConditions: kubectl label: ${relabel.stdout.trim()}`);
    // A change of our own tuning key must still be reviewed: refused while the webhook is down.
    const tuned = await cp.kubectl([
      'annotate',
      'pod',
      '-n',
      NS,
      podName,
      'smcr.erdma.io/wmem=1048576',
    ]);
    expect(tuned.status, 'a tuning change while the webhook is down').not.toBe(0);
    expect(tuned.stderr).toMatch(/failed calling webhook "pods\.smcr\.erdma\.io"/);
    console.log(`outage, the overlay: our tuning key refused: ${tuned.stderr.trim()}`);
    // The CEL library the unit tests use agrees with the API server on both requests.
    const tunedObj = JSON.parse(JSON.stringify(after)) as Obj;
    tunedObj.metadata.annotations!['smcr.erdma.io/wmem'] = '1048576';
    expect(podWebhookCalled(tunedObj as unknown as Json, after as unknown as Json, 'UPDATE')).toBe(
      true,
    );
    const unannotated = await cp.kubectl(
      ['create', '-f', '-'],
      JSON.stringify({
        ...annotatedPod('plain-during-outage'),
        metadata: { name: 'plain-during-outage', namespace: NS },
      }),
    );
    expect(unannotated.status, unannotated.stderr).toBe(0);
    await kubectl('delete', 'pod', '-n', NS, 'plain-during-outage', '--wait=false');
    await until(
      'the annotated Job complete',
      async () => (await getJson('job', '-n', NS, 'outage')).status.succeeded === 1 || undefined,
      120_000,
    );
    // The garbage collector takes the orphaned Job's owner reference off its pod (an UPDATE).
    await kubectl('delete', 'job', '-n', NS, 'outage', '--cascade=orphan', '--wait=false');
    await until('the owner reference removed by the garbage collector', async () => {
      const p = await getJson('pod', '-n', NS, podName);
      return (p.metadata as { ownerReferences?: unknown[] }).ownerReferences?.length
        ? undefined
        : true;
    });
    // Creation still fails closed: an annotated pod is refused, never admitted unreviewed.
    const created = await cp.kubectl(
      ['create', '-f', '-'],
      JSON.stringify(annotatedPod('during-outage')),
    );
    expect(created.status, 'an annotated pod created while the webhook is down').not.toBe(0);
    expect(created.stderr).toMatch(/failed calling webhook/);
    console.log(`outage, the overlay: annotated pod creation refused: ${created.stderr.trim()}`);
  } finally {
    // apply's three-way merge keeps a field it never applied: the matchConditions go first.
    const now = (await getJson('mutatingwebhookconfiguration', 'erdma-smcr')).webhooks[0];
    if (now.matchConditions)
      await patchWebhook([{ op: 'remove', path: '/webhooks/0/matchConditions' }]);
    await kubectl('apply', '-k', overlay); // the configuration and 2 replicas as installed
    await rolledOut('deployment', 'erdma-smcr-webhook');
    await webhookAnswers(c);
    await cp.kubectl(['delete', 'pod', '-n', NS, podName, '--wait=false']);
  }
  const wh = (await getJson('mutatingwebhookconfiguration', 'erdma-smcr')).webhooks[0];
  expect([wh.failurePolicy, wh.rules[0].operations, wh.matchConditions]).toEqual([
    'Ignore',
    ['CREATE', 'UPDATE'],
    undefined,
  ]);
  await annotatedPodRuns(c, 'after-outage');
}

export const imagesByComponent = async (c: InCluster): Promise<Record<string, string[]>> => {
  const out: Record<string, string[]> = {};
  for (const p of (await c.getJson('pods', '-n', 'erdma-smcr')).items) {
    if (p.metadata.deletionTimestamp) continue;
    const k = p.metadata.labels?.['app.kubernetes.io/component'] ?? '?';
    out[k] = [...(out[k] ?? []), ...p.spec.containers.map((x: { image: string }) => x.image)];
  }
  for (const k of Object.keys(out)) out[k] = [...new Set(out[k])].sort();
  return out;
};

/**
 * docs/install.md, "Device plugin, node by node": cordon, delete its pod, wait until the kubelet
 * counts the devices again, uncordon.
 */
export async function replaceDevicePluginPod(c: InCluster): Promise<void> {
  const { kubectl, getJson, until } = c;
  const dp = async (): Promise<Obj | undefined> =>
    (
      await getJson(
        'pods',
        '-n',
        'erdma-smcr',
        '-l',
        'app.kubernetes.io/component=device-plugin',
        '--field-selector',
        `spec.nodeName=${NODE}`,
      )
    ).items.find((p) => !p.metadata.deletionTimestamp);
  const old = (await dp())!.metadata.name;
  await kubectl('cordon', NODE);
  try {
    await kubectl(
      'delete',
      'pod',
      '-n',
      'erdma-smcr',
      '-l',
      'app.kubernetes.io/component=device-plugin',
      '--field-selector',
      `spec.nodeName=${NODE}`,
      '--wait=false',
    );
    await until(
      'the new device plugin pod ready',
      async () => {
        const p = await dp();
        return p && p.metadata.name !== old && p.status.containerStatuses?.[0]?.ready
          ? true
          : undefined;
      },
      120_000,
    );
    await until(
      'aliyun/erdma allocatable again',
      async () =>
        Number((await getJson('node', NODE)).status.allocatable?.['aliyun/erdma'] ?? 0) > 0 ||
        undefined,
      120_000,
    );
  } finally {
    await kubectl('uncordon', NODE);
  }
}

/** Applies a release's overlay and rolls everything, the way docs/install.md#upgrade says. */
async function applyRelease(c: InCluster, overlay: string): Promise<void> {
  await c.kubectl('apply', '-k', overlay);
  await c.rolledOut('daemonset', 'erdma-smcr-agent');
  await c.rolledOut('deployment', 'erdma-smcr-webhook');
  await replaceDevicePluginPod(c);
  await c.until('no old pod of ours left', async () => {
    const pods = (await c.getJson('pods', '-n', 'erdma-smcr')).items;
    return pods.every((p) => !p.metadata.deletionTimestamp) ? true : undefined;
  });
}

/**
 * #80 item 4: upgrade to a release with a new image tag and a changed agent (`next`: the image
 * retagged in the node's containerd, and the agent's log level changed), then roll back to the
 * installed overlay. Each time an annotated pod runs afterwards.
 */
export async function upgradeAndRollBack(
  c: InCluster,
  installed: string,
  next: string,
): Promise<void> {
  c.node.containerd.ctr(['images', 'tag', '--force', `${IMAGE}:test`, `${IMAGE}:next`]);
  const agentEnv = async (): Promise<Record<string, string>> => {
    const ds = await c.getJson('daemonset', '-n', 'erdma-smcr', 'erdma-smcr-agent');
    return Object.fromEntries(
      (ds.spec.template.spec.containers[0].env as { name: string; value?: string }[]).map((e) => [
        e.name,
        e.value ?? '',
      ]),
    );
  };
  const all = (tag: string) => ({
    agent: [`${IMAGE}:${tag}`],
    'device-plugin': [`${IMAGE}:${tag}`],
    webhook: [`${IMAGE}:${tag}`],
  });
  expect(await imagesByComponent(c)).toEqual(all('test'));

  // Upgrade: see what changes, then apply it.
  const diff = await c.cp.kubectl(['diff', '-k', next]);
  expect(diff.status, diff.stderr).toBe(1); // kubectl diff: 1 when there are differences
  expect(diff.stdout).toContain(`${IMAGE}:next`);
  console.log(
    `upgrade: kubectl diff -k ${next} (exit 1):\n${diff.stdout
      .split('\n')
      .filter((l) => /^[-+] /.test(l))
      .join('\n')}`,
  );
  await applyRelease(c, next);
  expect(await imagesByComponent(c)).toEqual(all('next'));
  console.log(`upgraded: ${JSON.stringify(await imagesByComponent(c))}`);
  expect((await agentEnv())['ERDMA_SMCR_LOG_LEVEL']).toBe('debug');
  await annotatedPodRuns(c, 'after-upgrade');

  // Roll back: the previous release's overlay, applied the same way.
  await applyRelease(c, installed);
  expect(await imagesByComponent(c)).toEqual(all('test'));
  console.log(`rolled back: ${JSON.stringify(await imagesByComponent(c))}`);
  expect((await agentEnv())['ERDMA_SMCR_LOG_LEVEL']).toBeUndefined();
  await annotatedPodRuns(c, 'after-rollback');
}

/**
 * Host paths of ours on the node after an uninstall, found by name (the harness maps /opt, /etc's
 * CNI dir and /sys/fs/bpf below HOST; /var and /run are the node's own). The runtime's and the
 * kubelet's own directories are theirs to clean: containerd's, the kubelet's, and the pod logs
 * (/var/log/pods, /var/log/containers) the kubelet removes with each pod.
 */
const HARNESS_BINDS = ['/var/lib/cni/erdma-smcr', '/run/erdma-smcr', '/var/log/erdma-smcr'];

export function ourHostPaths(c: InCluster): string[] {
  const out = c.node.exec('sh', [
    '-c',
    `find ${HOST} /var/lib /var/log /run -mindepth 1 \\( -path /var/lib/containerd -o -path /var/lib/kubelet -o -path /run/containerd -o -path /var/log/pods -o -path /var/log/containers \\) -prune -o \\( -name '*erdma-smcr*' -o -name 'libsmc-preload*' \\) -print -prune 2>/dev/null; true`,
  ]);
  // Some of the node's /var and /run are bound from HOST: a path seen both ways is one path.
  const found = [
    ...new Set(
      out
        .split('\n')
        .filter(Boolean)
        .map((p) => (p.startsWith(`${HOST}/`) ? p.slice(HOST.length) : p)),
    ),
  ].sort();
  // Those the harness itself makes and binds into the node (test/harness/k8s/node.ts) exist from
  // its start: they are ours only when something is in them.
  return found.filter(
    (p) => !HARNESS_BINDS.includes(p) || c.node.exec('ls', ['-A', p]).trim() !== '',
  );
}

/**
 * docs/install.md "Uninstall", with `remove` for the objects (kubectl delete -k, helm uninstall):
 * the agent's --uninstall in each agent pod first, then `remove`, the namespace gone, our labels
 * removed; then the conflist is as it was, our binary and labels gone, running pods untouched,
 * and on the node only what the runbook lists, which its command removes.
 */
export async function uninstalledAsTheRunbookSays(
  c: InCluster,
  conflistBefore: string,
  remove: () => Promise<void>,
): Promise<void> {
  const { cp, kubectl, getJson, until, rolledOut, node } = c;
  const ctx = c;
  const agentPods = (): Promise<string[]> => agentPodNames(kubectl);
  await rolledOut('daemonset', 'erdma-smcr-agent'); // an agent pod to exec into
  const before = (await getJson('pods', '-n', 'apps', '-l', 'app=web')).items
    .map((p) => p.metadata.uid)
    .sort();
  const agents = await agentPods();
  for (const p of agents)
    await kubectl(
      'exec',
      '-n',
      'erdma-smcr',
      p,
      '--',
      'node',
      '/app/bin/erdma-smcr.js',
      'agent',
      '--uninstall',
    );
  await remove();
  await until(
    'the erdma-smcr namespace gone',
    async () =>
      (await cp.kubectl(['get', 'namespace', 'erdma-smcr'])).status !== 0 ? true : undefined,
    170_000,
  );
  await kubectl(
    'label',
    'nodes',
    '--all',
    'smcr.erdma.io/erdma-node-',
    'smcr.erdma.io/capable-',
    'smcr.erdma.io/driver-mode-',
    'smcr.erdma.io/reason-',
    'smcr.erdma.io/mechanism-',
    'smcr.erdma.io/smcd-loopback-',
    'smcr.erdma.io/erdma-reserved-ports-',
    'smcr.erdma.io/smc-reserved-ports-',
    'smcr.erdma.io/device-plugin-reason-',
    'smcr.erdma.io/selection-',
  );
  expect(readFileSync(CONFLIST, 'utf8')).toBe(conflistBefore);
  expect(existsSync(join(HOST, 'opt/cni/bin/erdma-smcr'))).toBe(false);
  expect(existsSync(join(HOST, 'opt/erdma-smcr/lib/libsmc-preload.so'))).toBe(false);
  const nodeObj = await getJson('node', NODE);
  const ourKeys = (m: Record<string, string> | undefined): string[] =>
    Object.keys(m ?? {}).filter((k) => k.includes('erdma-smcr') || k.includes('smcr.erdma.io'));
  expect(ourKeys(nodeObj.metadata.labels)).toEqual([]);
  expect(ourKeys(nodeObj.metadata.annotations)).toEqual([]);
  const after = (await getJson('pods', '-n', 'apps', '-l', 'app=web')).items;
  expect(after.map((p) => p.metadata.uid).sort()).toEqual(before);
  expect(after.every((p) => p.status.phase === 'Running')).toBe(true);
  // Nothing of ours in the API but what the runbook lists (aliyun/erdma at 0, Events).
  const clusterScoped = await kubectl(
    'get',
    'mutatingwebhookconfigurations,validatingwebhookconfigurations,clusterroles,clusterrolebindings,priorityclasses,apiservices',
    '-o',
    'name',
  );
  expect(clusterScoped.split('\n').filter((n) => /erdma|smcr/.test(n))).toEqual([]);
  await until(
    'aliyun/erdma at 0 once its device plugin is gone',
    async () =>
      Number((await getJson('node', NODE)).status.allocatable?.['aliyun/erdma'] ?? 0) === 0 ||
      undefined,
  );
  // On the node: exactly the directories the runbook lists; then its command removes them.
  const left = ourHostPaths(ctx);
  console.log(`left on the node after the uninstall: ${left.join(' ')}`);
  expect(left).toEqual([
    '/opt/erdma-smcr',
    '/run/erdma-smcr',
    '/var/lib/cni/erdma-smcr',
    '/var/log/erdma-smcr',
  ]);
  // The runbook's command (on the harness's bind mounts the directory itself stays, emptied).
  node.exec('sh', [
    '-c',
    `rm -rf ${left.map((p) => (p.startsWith('/opt/') ? join(HOST, p) : p)).join(' ')}; true`,
  ]);
  expect(ourHostPaths(ctx)).toEqual([]);
}
