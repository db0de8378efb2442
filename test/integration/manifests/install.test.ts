// Installing and uninstalling the shipped manifests with kubectl (and its built-in kustomize)
// against the harness's real API servers, 1.37 and 1.35 (the newest minor and the oldest that ACK
// and upstream both support), as a new admin would: no --validate=false. Every shipped install
// (the base, the match-conditions and cert-manager overlays, the node-restriction component) must
// pass a server-side dry run on both; the local-image test overlay, which changes only the image,
// must apply, re-apply unchanged and delete cleanly. The negative control: a matchCondition whose
// CEL names a field that does not exist is refused by the API server's own compiler.
import { spawnSync } from 'node:child_process';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  binPath,
  startControlPlane,
  type ControlPlane,
  type KubeMinor,
} from '../../harness/k8s/control-plane.js';
import { until } from '../../helpers/wait.js';
import { CHART, helmEnv, helmTemplate } from '../../harness/helm.js';
import { k8s135, k8sBinaries, requires } from '../../helpers/requires.js';

const why = requires(
  'the install suite (kubectl, real API servers 1.37 and 1.35)',
  k8sBinaries(['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl', 'helm']),
  k8s135,
);
const OVERLAY = 'test/integration/manifests/local-image';
/** The match-conditions overlay with the node-restriction component. */
const NODE_RESTRICTION = 'test/integration/manifests/node-restriction';
/** What an admin installs, each as kubectl builds it. */
const SHIPPED = [
  'manifests/base',
  'manifests/overlays/match-conditions',
  'manifests/overlays/cert-manager',
  'manifests/overlays/dra',
] as const;

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
} & Record<string, unknown>;

function render(dir: string, minor: KubeMinor = '1.37'): Obj[] {
  const r = spawnSync(binPath('kubectl', minor), ['kustomize', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${r.stderr}`);
  return yaml.loadAll(r.stdout) as Obj[];
}

/** Server-side dry-run lines that only say a namespace the same run would create is not there yet. */
const dryRunArtifact = (l: string): boolean =>
  /namespaces "erdma-smcr" not found|ensure CRDs are installed/.test(l) ||
  // The cert-manager overlay needs cert-manager's CRDs, which this cluster does not have.
  /no matches for kind "(Certificate|Issuer)" in version "cert-manager\.io\/v1"/.test(l);

describe.skipIf(why !== '').each(['1.37', '1.35'] as const)(
  'installing the manifests on Kubernetes %s with its kubectl',
  (minor) => {
    let cp: ControlPlane;
    beforeAll(async () => {
      cp = await startControlPlane({ controllerManager: true, minor });
      const v = await cp.kubectl(['version', '-o', 'json']);
      const seen = JSON.parse(v.stdout) as {
        clientVersion: { gitVersion: string };
        serverVersion: { gitVersion: string };
      };
      console.log(
        `kubectl version: client ${seen.clientVersion.gitVersion}, server ${seen.serverVersion.gitVersion}`,
      );
      expect(seen.serverVersion.gitVersion).toMatch(
        new RegExp(`^v${minor.replace('.', '\\.')}\\.`),
      );
      expect(seen.clientVersion.gitVersion).toMatch(
        new RegExp(`^v${minor.replace('.', '\\.')}\\.`),
      );
    }, 180_000);
    afterAll(async () => {
      await cp?.stop();
    });

    it('the local-image overlay changes the base only in its image and pull policy', () => {
      const base = render('manifests/base', minor);
      const ours = render(OVERLAY, minor);
      expect(ours.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
        base.map((o) => `${o.kind}/${o.metadata.name}`),
      );
      const undone = ours.map((o) => {
        const c = structuredClone(o) as Obj & {
          spec?: { template?: { spec?: { containers?: Record<string, unknown>[] } } };
        };
        for (const ctr of c.spec?.template?.spec?.containers ?? []) {
          if (ctr.image === 'localhost/erdma-smcr:test') {
            ctr.image = 'ghcr.io/erdma-smcr/erdma-smcr:0.1.0';
            // The preload init container's image follows it (the overlay's replacements).
            for (const e of (ctr.env ?? []) as { name: string; value?: string }[])
              if (e.name === 'ERDMA_SMCR_PRELOAD_IMAGE') {
                expect(e.value).toBe('localhost/erdma-smcr:test');
                e.value = 'ghcr.io/erdma-smcr/erdma-smcr:0.1.0';
              }
            expect(ctr.imagePullPolicy).toBe('Never');
            delete ctr.imagePullPolicy;
          }
        }
        return c;
      });
      expect(undone).toEqual(base);
    });

    it.each(SHIPPED)(
      '%s passes a server-side dry run with no error but the not-yet-created namespace',
      async (dir) => {
        const r = await cp.kubectl(['apply', '-k', dir, '--dry-run=server']);
        const errors = r.stderr.split('\n').filter((l) => l.trim() !== '' && !dryRunArtifact(l));
        expect(errors).toEqual([]);
        expect(r.stdout).toMatch(
          /mutatingwebhookconfiguration\.admissionregistration\.k8s\.io\/erdma-smcr created \(server dry run\)/,
        );
      },
    );

    // #86 item 3: DRAExtendedResource is GA in 1.37 and alpha (off) in 1.35, whose API server drops
    // the field: there aliyun/erdma stays the device plugin's (docs/agent.md, the install table).
    it(`the DRA DeviceClass keeps extendedResourceName on ${minor === '1.37' ? '1.37' : '1.35 only if its gate is on: it is dropped'}`, async () => {
      const cls = render('manifests/overlays/dra', minor).find((o) => o.kind === 'DeviceClass')!;
      const r = await cp.kubectl(
        ['create', '--dry-run=server', '-o', 'json', '-f', '-'],
        JSON.stringify(cls),
      );
      expect(r.status, r.stderr).toBe(0);
      const stored = JSON.parse(r.stdout) as {
        spec: { extendedResourceName?: string; selectors: unknown[] };
      };
      expect(stored.spec.selectors).toHaveLength(1);
      console.log(
        `DeviceClass on ${minor}: extendedResourceName ${stored.spec.extendedResourceName ?? '(dropped)'}`,
      );
      if (minor === '1.37') expect(stored.spec.extendedResourceName).toBe('aliyun/erdma');
      else expect(stored.spec.extendedResourceName).toBeUndefined();
    });

    it('the node-restriction component (a ValidatingAdmissionPolicy and its binding) passes a server-side dry run', async () => {
      const r = await cp.kubectl(['apply', '-k', NODE_RESTRICTION, '--dry-run=server']);
      expect(r.stderr.split('\n').filter((l) => l.trim() !== '' && !dryRunArtifact(l))).toEqual([]);
      expect(r.stdout).toMatch(
        /validatingadmissionpolicy\.admissionregistration\.k8s\.io\/\S+ created \(server dry run\)/,
      );
      expect(r.stdout).toMatch(
        /validatingadmissionpolicybinding\.admissionregistration\.k8s\.io\/\S+ created \(server dry run\)/,
      );
    });

    // #87 item 4: what `helm template` renders for this API server's version, with each value
    // that changes an object's shape, passes the API server's own validation.
    it.each([
      ['the defaults', []],
      [
        'failurePolicy Fail, node restriction, DRA and the device plugin both, cert-manager',
        [
          '--set',
          'webhook.failurePolicy=Fail',
          '--set',
          'nodeRestriction.enabled=true',
          '--set',
          'devices.path=both',
          '--set',
          'certificates.source=cert-manager',
        ],
      ],
      [
        'all devices to a pod, rdma/hca, debug logs',
        [
          '--set',
          'devices.allocation=all',
          '--set',
          'logLevel=debug',
          '--set-json',
          'devices.resources=[{"name":"aliyun/erdma","selector":{"drivers":["erdma"]}},{"name":"rdma/hca","selector":{"drivers":["erdma"]},"mode":"shared"}]',
        ],
      ],
    ] as const)('helm template with %s passes a server-side dry run', async (_what, values) => {
      // Into a namespace of its own, made for real: every namespaced object is then validated
      // too (the kustomizations' dry runs above cannot, their Namespace not being there yet).
      const ns = `helm-${values.length}`;
      await cp.kubectl(['create', 'namespace', ns]);
      const t = helmTemplate([
        '--kube-version',
        minor === '1.37' ? '1.37.0' : '1.35.0',
        '--namespace',
        ns,
        ...values,
      ]);
      expect(t.status, t.stderr).toBe(0);
      const r = await cp.kubectl(['apply', '-f', '-', '--dry-run=server'], t.stdout);
      const errors = r.stderr.split('\n').filter((l) => l.trim() !== '' && !dryRunArtifact(l));
      expect(errors).toEqual([]);
      expect(r.stdout).toMatch(/daemonset\.apps\/erdma-smcr-agent created \(server dry run\)/);
      expect(r.stdout).toMatch(/deployment\.apps\/erdma-smcr-webhook created \(server dry run\)/);
      if (minor === '1.37' && (values as readonly string[]).includes('devices.path=both'))
        expect(r.stdout).toMatch(/deviceclass\.resource\.k8s\.io\/erdma\.smcr\.erdma\.io created/);
    });

    it('refuses a matchCondition whose CEL names a field that does not exist (the negative control)', async () => {
      const built = render('manifests/overlays/match-conditions', minor);
      const hook = built.find((o) => o.kind === 'MutatingWebhookConfiguration')!;
      const broken = structuredClone(hook) as Obj & {
        webhooks: { matchConditions: { name: string; expression: string }[] }[];
      };
      broken.webhooks[0]!.matchConditions[0]!.expression = 'has(objekt.metadata.annotations)';
      const r = await cp.kubectl(['apply', '-f', '-', '--dry-run=server'], JSON.stringify(broken));
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(
        /matchConditions\[0\]\.expression: Invalid value.*compilation failed/s,
      );
    });

    it('applies the local-image overlay, re-applies it unchanged, and deletes every object again', async () => {
      const applied = await cp.kubectl(['apply', '-k', OVERLAY]);
      expect(applied.status, applied.stderr).toBe(0);
      const objs = render(OVERLAY, minor);
      expect(applied.stdout.trim().split('\n')).toHaveLength(objs.length);
      const versions = async (): Promise<Record<string, string>> =>
        Object.fromEntries(
          (
            JSON.parse((await cp.kubectl(['get', '-k', OVERLAY, '-o', 'json'])).stdout) as {
              items: Obj[];
            }
          ).items.map((o) => [
            `${o.kind}/${o.metadata.name}`,
            (o.metadata as { resourceVersion?: string }).resourceVersion ?? '',
          ]),
        );
      const before = await versions();
      const again = await cp.kubectl(['apply', '-k', OVERLAY]);
      expect(again.status, again.stderr).toBe(0);
      // kubectl says "configured" for a policy/v1 PDB on every apply: its selector is
      // patchStrategy=replace, so the patch is never empty. The server stores nothing new.
      expect(
        again.stdout
          .trim()
          .split('\n')
          .filter((l) => !l.endsWith(' unchanged')),
      ).toEqual(['poddisruptionbudget.policy/erdma-smcr-webhook configured']);
      expect(await versions()).toEqual(before);
      const got = await cp.kubectl(['get', '-k', OVERLAY, '-o', 'name']);
      expect(got.stdout.trim().split('\n')).toHaveLength(objs.length);

      const deleted = await cp.kubectl(['delete', '-k', OVERLAY, '--wait=false']);
      expect(deleted.status, deleted.stderr).toBe(0);
      await until(
        'namespace and cluster-scoped objects gone',
        async () => {
          const left = await cp.kubectl(['get', '-k', OVERLAY, '-o', 'name', '--ignore-not-found']);
          return left.status === 0 && left.stdout.trim() === '';
        },
        60_000,
      );
    });

    it("helm install puts everything in the release's namespace, and a second install in the cluster is refused naming the first", async () => {
      const helm = (args: string[]): { status: number | null; stdout: string; stderr: string } =>
        spawnSync(binPath('helm'), args, {
          encoding: 'utf8',
          env: helmEnv({ KUBECONFIG: cp.kubeconfig }),
        });
      // Installed by kubectl first: Helm is told who holds the cluster-wide objects.
      const applied = await cp.kubectl(['apply', '-k', 'manifests/base']);
      expect(applied.status, applied.stderr).toBe(0);
      const overKubectl = helm(['install', 'one', CHART, '-n', 'other', '--create-namespace']);
      expect(overKubectl.status).not.toBe(0);
      expect(overKubectl.stderr).toMatch(
        /erdma-smcr is already installed in this cluster by kubectl apply \(its ClusterRole erdma-smcr-agent has no Helm release\)/,
      );
      expect((await cp.kubectl(['delete', '-k', 'manifests/base'])).status).toBe(0);
      // A release in a namespace of its choice: every namespaced object there.
      const one = helm(['install', 'one', CHART, '-n', 'other', '--create-namespace']);
      expect(one.status, one.stderr).toBe(0);
      const inOther = await cp.kubectl([
        'get',
        'deployment,daemonset,configmap,service',
        '-n',
        'other',
        '-o',
        'name',
      ]);
      expect(inOther.stdout).toMatch(/deployment\.apps\/erdma-smcr-webhook/);
      expect(inOther.stdout).toMatch(/daemonset\.apps\/erdma-smcr-agent/);
      expect(inOther.stdout).toMatch(/configmap\/erdma-smcr-cluster/);
      const binding = JSON.parse(
        (await cp.kubectl(['get', 'clusterrolebinding', 'erdma-smcr-agent', '-o', 'json'])).stdout,
      ) as { subjects: { namespace: string }[] };
      expect(binding.subjects[0]!.namespace).toBe('other');
      expect((await cp.kubectl(['get', 'namespace', 'erdma-smcr'])).status).not.toBe(0);
      // A second release elsewhere would fight the first on every node: refused, naming it.
      const two = helm(['install', 'two', CHART, '-n', 'third', '--create-namespace']);
      expect(two.status).not.toBe(0);
      console.log(`a second release: ${two.stderr.trim()}`);
      expect(two.stderr).toContain(
        'erdma-smcr is already installed in this cluster as Helm release one in namespace other: upgrade that one (helm upgrade one -n other), or uninstall it first',
      );
      // The release itself upgrades as before.
      const upgraded = helm(['upgrade', 'one', CHART, '-n', 'other', '--set', 'logLevel=debug']);
      expect(upgraded.status, upgraded.stderr).toBe(0);
      expect(helm(['uninstall', 'one', '-n', 'other']).status).toBe(0);
    });
  },
);
