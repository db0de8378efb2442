// The match-conditions overlay on real API servers, 1.37 and 1.35: with the overlay's own
// matchConditions (rendered from manifests/overlays/match-conditions by kubectl's kustomize) the
// API server never calls our webhook for an unannotated pod, an unannotated Deployment and its
// pods, or a label update of an annotated pod: the webhook's request counter does not move. An
// annotated pod does reach it and is mutated. The negative control: the base's configuration (no
// matchConditions) sends the same unannotated pod to the webhook, and the counter moves.
import { spawnSync } from 'node:child_process';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  binPath,
  ensureBinaries,
  startControlPlane,
  type ControlPlane,
} from '../../harness/k8s/control-plane.js';
import { startWebhookProc, type WebhookProc } from '../../harness/webhook-proc.js';
import { registration, WEBHOOK_IP } from '../../harness/registration.js';
import { smcrDeployment } from '../../helpers/deployments.js';
import { k8s135, requires } from '../../helpers/requires.js';
import { until } from '../../helpers/wait.js';
import { e2ePod } from '../../helpers/e2e-pod.js';

const why = requires(
  'the match-conditions suite (real API servers 1.37 and 1.35)',
  ensureBinaries,
  k8s135,
);

const SMCR = 'network.alibabacloud.com/erdma-smcr';

type Hook = { name: string; matchConditions?: unknown[]; failurePolicy?: string };

/** The overlay's webhooks by name, as kubectl's kustomize renders them. */
function overlayHooks(): Map<string, Hook> {
  const r = spawnSync(binPath('kubectl'), ['kustomize', 'manifests/overlays/match-conditions'], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`kubectl kustomize: ${r.stderr}`);
  const hooks = new Map<string, Hook>();
  for (const o of yaml.loadAll(r.stdout) as { kind: string; webhooks?: Hook[] }[])
    if (o.kind.endsWith('WebhookConfiguration'))
      for (const h of o.webhooks ?? []) hooks.set(h.name, h);
  return hooks;
}

const pod = (name: string, annotations: Record<string, string> = {}): string =>
  e2ePod(name, annotations);

/** Reviews the webhook answered so far, over every endpoint, operation, kind and verdict. */
async function reviews(hook: WebhookProc): Promise<number> {
  let sum = 0;
  for (const line of (await hook.metrics()).split('\n'))
    if (line.startsWith('erdma_smcr_admission_requests_total{'))
      sum += Number(line.split(' ').pop());
  return sum;
}

describe.skipIf(why !== '').each(['1.37', '1.35'] as const)(
  'the match-conditions overlay on Kubernetes %s',
  (minor) => {
    let cp: ControlPlane;
    let hook: WebhookProc;

    /** Registers the base's configuration, with the overlay's matchConditions when asked. */
    const register = async (withOverlay: boolean): Promise<void> => {
      const list = JSON.parse(registration(hook.port, hook.caPem, 'Ignore')) as {
        items: { kind: string; webhooks?: Hook[] }[];
      };
      const shipped = overlayHooks();
      for (const item of list.items)
        for (const h of item.webhooks ?? []) {
          const o = shipped.get(h.name)!;
          if (withOverlay) h.matchConditions = o.matchConditions;
          else delete h.matchConditions;
        }
      const r = await cp.kubectl(
        ['apply', '--server-side', '--force-conflicts', '-f', '-'],
        JSON.stringify(list),
      );
      expect(r.status, r.stderr).toBe(0);
    };

    beforeAll(async () => {
      [cp, hook] = await Promise.all([
        startControlPlane({ controllerManager: true, minor }),
        startWebhookProc(WEBHOOK_IP, ['--log-level', 'info']),
      ]);
      const v = await cp.kubectl(['version']);
      console.log(`kubectl version (${minor}):\n${v.stdout.trim()}`);
      expect(v.stdout).toMatch(new RegExp(`Server Version: v${minor.replace('.', '\\.')}\\.`));
    }, 180_000);

    afterAll(async () => {
      await Promise.all([cp?.stop(), hook?.stop()]);
    });

    it('without matchConditions (the base), an unannotated pod reaches the webhook: the negative control', async () => {
      await register(false);
      const before = await reviews(hook);
      const r = await cp.kubectl(['create', '-f', '-'], pod('plain-base'));
      expect(r.status, r.stderr).toBe(0);
      await until(
        'the review counted',
        async () => ((await reviews(hook)) > before ? true : undefined),
        10_000,
      );
    });

    it('with the overlay, unannotated pods and workloads and label updates never reach the webhook', async () => {
      await register(true);
      const annotated = await cp.kubectl(
        ['create', '-o', 'json', '-f', '-'],
        pod('smcr', { [SMCR]: 'true' }),
      );
      expect(annotated.status, annotated.stderr).toBe(0);
      // A pause for the webhook's own counter to settle after the annotated create.
      await new Promise((r) => setTimeout(r, 500));
      const before = await reviews(hook);
      expect((await cp.kubectl(['create', '-f', '-'], pod('plain-overlay'))).status).toBe(0);
      const plainDeploy = smcrDeployment('plain-web', 'e2e', {
        containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
      }) as { spec: { template: { metadata: { annotations?: Record<string, string> } } } };
      delete plainDeploy.spec.template.metadata.annotations;
      expect((await cp.kubectl(['apply', '-f', '-'], JSON.stringify(plainDeploy))).status).toBe(0);
      await until(
        "the Deployment's pods created",
        async () => {
          const r = await cp.kubectl([
            'get',
            'pods',
            '-n',
            'e2e',
            '-l',
            'app=plain-web',
            '-o',
            'name',
          ]);
          return r.stdout.trim().split('\n').filter(Boolean).length === 2 ? true : undefined;
        },
        60_000,
      );
      const labelled = await cp.kubectl(['label', 'pod', '-n', 'e2e', 'smcr', 'team=a']);
      expect(labelled.status, labelled.stderr).toBe(0);
      await new Promise((r) => setTimeout(r, 500));
      const after = await reviews(hook);
      console.log(
        `match-conditions on ${minor}: reviews before ${before}, after an unannotated pod, an unannotated Deployment with 2 pods and a label update: ${after}`,
      );
      expect(after).toBe(before);
    });

    it('with the overlay, kubectl apply --dry-run=server shows our denial and our warning, and stores nothing', async () => {
      const denied = await cp.kubectl(
        ['apply', '--dry-run=server', '-f', '-'],
        JSON.stringify({
          ...(JSON.parse(pod('dry-hostnet', { [SMCR]: 'true' })) as Record<string, unknown>),
          spec: {
            hostNetwork: true,
            automountServiceAccountToken: false,
            containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
          },
        }),
      );
      expect(denied.status).not.toBe(0);
      expect(denied.stderr).toMatch(
        /admission webhook "pods\.smcr\.erdma\.io" denied the request: \[host-network\] spec\.hostNetwork: SMC-R cannot be enabled for a hostNetwork pod/,
      );
      const warned = await cp.kubectl(
        ['apply', '--dry-run=server', '-f', '-'],
        pod('dry-true', { [SMCR]: 'True' }),
      );
      expect(warned.status, warned.stderr).toBe(0);
      expect(warned.stderr).toMatch(
        /Warning: network\.alibabacloud\.com\/erdma-smcr: "True" is read as "true"/,
      );
      for (const name of ['dry-hostnet', 'dry-true'])
        expect((await cp.kubectl(['get', 'pod', '-n', 'e2e', name])).stderr).toMatch(/NotFound/);
    });

    it('with the overlay, an annotated pod reaches the webhook and is stored mutated', async () => {
      const before = await reviews(hook);
      const r = await cp.kubectl(
        ['create', '-o', 'json', '-f', '-'],
        pod('smcr-2', { [SMCR]: 'true' }),
      );
      expect(r.status, r.stderr).toBe(0);
      const stored = JSON.parse(r.stdout) as {
        spec: { containers: { resources: { limits?: Record<string, string> } }[] };
      };
      expect(stored.spec.containers[0]!.resources.limits?.['aliyun/erdma']).toBe('1');
      await until(
        'the review counted',
        async () => ((await reviews(hook)) > before ? true : undefined),
        10_000,
      );
    });
  },
);
