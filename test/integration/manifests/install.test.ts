// Installing and uninstalling the shipped manifests with Debian's kubectl 1.20 against the
// harness's real v1.20.2 API server, as a new admin would: no --validate=false. The base must
// fail there only for what 1.20 genuinely lacks (policy/v1), and the 1.20 test overlay, which
// changes nothing else, must apply, re-apply unchanged and delete cleanly.
import { kustomizeBuild } from '../../harness/kustomize.js';
import { spawnSync } from 'node:child_process';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBECTL, startControlPlane, type ControlPlane } from '../../harness/k8s/control-plane.js';
import { until } from '../../helpers/wait.js';
import { k8sBinaries, requires } from '../../helpers/requires.js';

const why = requires(
  'the install suite (kubectl 1.20, real API server)',
  k8sBinaries(['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl']),
);
const OVERLAY = 'test/integration/manifests/k8s-1.20';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
} & Record<string, unknown>;

function render(dir: string): Obj[] {
  const r = spawnSync(KUBECTL, ['kustomize', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${r.stderr}`);
  return yaml.loadAll(r.stdout) as Obj[];
}

let cp: ControlPlane;
beforeAll(async () => {
  if (why === '') cp = await startControlPlane({ controllerManager: true });
}, 120_000);
afterAll(async () => {
  await cp?.stop();
});

describe.skipIf(why !== '')(
  'installing manifests/base on Kubernetes 1.20 with kubectl 1.20',
  () => {
    it('the 1.20 overlay changes the base only where 1.20 lacks something, and the image', () => {
      const base = render('manifests/base');
      const ours = render(OVERLAY);
      expect(ours.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
        base.map((o) => `${o.kind}/${o.metadata.name}`),
      );
      // Undo the listed changes: what remains must be the base byte for byte (as data).
      const undone = ours.map((o) => {
        const c = structuredClone(o) as Obj & {
          spec?: { template?: { spec?: { containers?: Record<string, unknown>[] } } };
        };
        if (c.kind === 'PodDisruptionBudget') c.apiVersion = 'policy/v1';
        if (c.kind === 'Namespace') delete c.metadata.labels?.['kubernetes.io/metadata.name'];
        for (const ctr of c.spec?.template?.spec?.containers ?? []) {
          if (ctr.image === 'localhost/erdma-smcr:test') {
            ctr.image = 'ghcr.io/erdma-smcr/erdma-smcr:0.1.0';
            expect(ctr.imagePullPolicy).toBe('Never');
            delete ctr.imagePullPolicy;
          }
        }
        return c;
      });
      expect(undone).toEqual(base);
    });

    it('the base is refused only for policy/v1 (GA in 1.21), with no unknown-field errors', async () => {
      const r = await cp.kubectl(['apply', '-k', 'manifests/base', '--dry-run=server']);
      expect(r.status).not.toBe(0);
      const errors = r.stderr.split('\n').filter((l) => l.trim() !== '');
      expect(errors.join('\n')).toMatch(/PodDisruptionBudget.*policy\/v1/);
      expect(errors.join('\n')).not.toMatch(/unknown field|ValidationError/);
      // A server-side dry run creates no namespace, so the namespaced objects cannot find theirs.
      const dryRunArtifact = /namespaces "erdma-smcr" not found/;
      expect(
        errors.filter(
          (l) =>
            !/policy\/v1|PodDisruptionBudget|ensure CRDs are installed/.test(l) &&
            !dryRunArtifact.test(l),
        ),
      ).toEqual([]);
    });

    it('the match-conditions overlay is refused by a 1.20 API server, as its README line says (the negative control)', async () => {
      // Built as its users build it (kustomize v5), then sent to the 1.20 API server.
      const built = kustomizeBuild('manifests/overlays/match-conditions');
      expect(built.status, built.stderr).toBe(0);
      const r = await cp.kubectl(['apply', '-f', '-', '--dry-run=server'], built.stdout);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/unknown field "matchConditions"/);
    });

    it('applies the 1.20 overlay, re-applies it unchanged, and deletes every object again', async () => {
      const applied = await cp.kubectl(['apply', '-k', OVERLAY]);
      expect(applied.status, applied.stderr).toBe(0);
      const objs = render(OVERLAY);
      expect(applied.stdout.trim().split('\n')).toHaveLength(objs.length);
      const again = await cp.kubectl(['apply', '-k', OVERLAY]);
      expect(again.status, again.stderr).toBe(0);
      expect(
        again.stdout
          .trim()
          .split('\n')
          .every((l) => l.endsWith(' unchanged')),
      ).toBe(true);
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
  },
);
