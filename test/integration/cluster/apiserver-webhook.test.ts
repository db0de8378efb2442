// The real kube-apiserver (1.37, built from the Go module proxy) calling our webhook,
// registered by Service with a caBundle, so the API server verifies our certificate for
// erdma-smcr-webhook.erdma-smcr.svc. kubectl is 1.37's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureBinaries,
  startControlPlane,
  type ControlPlane,
} from '../../harness/k8s/control-plane.js';
import { startWebhookProc, type WebhookProc } from '../../harness/webhook-proc.js';
import { registration, WEBHOOK_IP } from '../../harness/registration.js';
import { smcrDeployment } from '../../helpers/deployments.js';
import { requires } from '../../helpers/requires.js';
import { e2ePod } from '../../helpers/e2e-pod.js';

const why = requires('the API server webhook suite', ensureBinaries);

const pod = (
  name: string,
  spec: Record<string, unknown> = {},
  annotations: Record<string, string> = { 'network.alibabacloud.com/erdma-smcr': 'true' },
): string => e2ePod(name, annotations, spec);

const deployment = (name: string, podSpec: Record<string, unknown> = {}) =>
  JSON.stringify(
    smcrDeployment(name, 'e2e', {
      containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
      ...podSpec,
    }),
  );

describe.skipIf(why !== '')('kube-apiserver → erdma-smcr webhook', () => {
  let cp: ControlPlane;
  let hook: WebhookProc;

  beforeAll(async () => {
    [cp, hook] = await Promise.all([
      startControlPlane({ controllerManager: true }),
      startWebhookProc(WEBHOOK_IP, ['--log-level', 'info']),
    ]);
    const r = await cp.kubectl(['apply', '-f', '-'], registration(hook.port, hook.caPem));
    expect(r.status, r.stderr).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([cp?.stop(), hook?.stop()]);
  });

  it('refuses a hostNetwork SMC-R pod at kubectl apply --dry-run=server with our message, storing nothing', async () => {
    const r = await cp.kubectl(
      ['apply', '--dry-run=server', '-f', '-'],
      pod('hostnet', { hostNetwork: true }),
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(
      /admission webhook "pods\.smcr\.erdma\.io" denied the request: \[host-network\] spec\.hostNetwork: SMC-R cannot be enabled for a hostNetwork pod/,
    );
    const get = await cp.kubectl(['get', 'pod', '-n', 'e2e', 'hostnet']);
    expect(get.stderr).toMatch(/NotFound/);
  });

  it('refuses an unquoted `true` annotation before any webhook runs, as `check` tells (examples/invalid/annotation-value.yaml)', async () => {
    // What `check` calls annotation-value for a non-string value: the API server itself refuses it.
    // kubectl refuses to decode it on the client; the raw POST shows the API server's own answer.
    const r = await cp.kubectl(
      ['create', '--raw', '/api/v1/namespaces/e2e/pods?dryRun=All', '-f', '-'],
      pod('unquoted').replace(
        '"network.alibabacloud.com/erdma-smcr":"true"',
        '"network.alibabacloud.com/erdma-smcr":true',
      ),
    );
    expect(r.status, r.stdout).not.toBe(0);
    expect(r.stderr).toMatch(
      /BadRequest.*cannot be handled as a Pod: json: cannot unmarshal bool into Go struct field ObjectMeta\.metadata\.annotations of type string/,
    );
    expect(r.stderr).not.toMatch(/admission webhook/);
  });

  it('shows the injected resource, affinity and settings at dry-run, with warnings, and stores nothing', async () => {
    const r = await cp.kubectl(
      ['apply', '--dry-run=server', '-o', 'json', '-f', '-'],
      pod('dry', {}, { 'network.alibabacloud.com/erdma-smcr': 'True' }),
    );
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.spec.containers[0].resources).toEqual({
      limits: { 'aliyun/erdma': '1' },
      requests: { 'aliyun/erdma': '1' },
    });
    expect(
      out.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
        .nodeSelectorTerms,
    ).toEqual([
      { matchExpressions: [{ key: 'smcr.erdma.io/capable', operator: 'In', values: ['true'] }] },
    ]);
    expect(
      JSON.parse(out.metadata.annotations['smcr.erdma.io/settings']).sysctls['net.smc.tcp2smc'],
    ).toBe('1');
    expect(r.stderr).toMatch(
      /Warning: network\.alibabacloud\.com\/erdma-smcr: "True" is read as "true"/,
    );
    expect((await cp.kubectl(['get', 'pod', '-n', 'e2e', 'dry'])).stderr).toMatch(/NotFound/);
  });

  it('stores the mutated pod on a real create', async () => {
    const r = await cp.kubectl(['create', '-o', 'json', '-f', '-'], pod('real'));
    expect(r.status, r.stderr).toBe(0);
    const stored = JSON.parse(
      (await cp.kubectl(['get', 'pod', '-n', 'e2e', 'real', '-o', 'json'])).stdout,
    );
    expect(stored.spec.containers[0].resources.limits['aliyun/erdma']).toBe('1');
    expect(stored.metadata.annotations['smcr.erdma.io/settings']).toContain('disable_ipv6');
  });

  it('routes pod UPDATE as shipped: puts back the settings annotation, removes one added, refuses bad tuning', async () => {
    const original = JSON.parse(
      (await cp.kubectl(['get', 'pod', '-n', 'e2e', 'real', '-o', 'json'])).stdout,
    ).metadata.annotations['smcr.erdma.io/settings'];
    const forged = '{"version":1,"sysctls":{"net.smc.wmem":"16384"}}';
    const changed = await cp.kubectl([
      'annotate',
      '-n',
      'e2e',
      'pod',
      'real',
      '--overwrite',
      `smcr.erdma.io/settings=${forged}`,
    ]);
    expect(changed.status, changed.stderr).toBe(0);
    const after = JSON.parse(
      (await cp.kubectl(['get', 'pod', '-n', 'e2e', 'real', '-o', 'json'])).stdout,
    ).metadata.annotations;
    expect(after['smcr.erdma.io/settings']).toBe(original);
    const tuned = await cp.kubectl([
      'annotate',
      '-n',
      'e2e',
      'pod',
      'real',
      'smcr.erdma.io/wmem=1',
    ]);
    expect(tuned.status).not.toBe(0);
    expect(tuned.stderr).toMatch(
      /denied the request: \[tuning\] metadata\.annotations\[smcr\.erdma\.io\/wmem\]: smcr\.erdma\.io\/wmem 1 is outside/,
    );
    // A pod created without SMC-R that is given the annotation and a forged settings document.
    expect((await cp.kubectl(['create', '-f', '-'], pod('later', {}, {}))).status).toBe(0);
    const added = await cp.kubectl([
      'annotate',
      '-n',
      'e2e',
      'pod',
      'later',
      'network.alibabacloud.com/erdma-smcr=true',
      `smcr.erdma.io/settings=${forged}`,
    ]);
    expect(added.status, added.stderr).toBe(0);
    expect(added.stderr).toMatch(/Warning: SMC-R is set up when a pod starts/);
    const later = JSON.parse(
      (await cp.kubectl(['get', 'pod', '-n', 'e2e', 'later', '-o', 'json'])).stdout,
    ).metadata.annotations;
    expect(later).toEqual({ 'network.alibabacloud.com/erdma-smcr': 'true' });
  });

  it('leaves pods without the annotation untouched', async () => {
    const r = await cp.kubectl(['create', '-o', 'json', '-f', '-'], pod('plain', {}, {}));
    expect(r.status, r.stderr).toBe(0);
    const stored = JSON.parse(r.stdout);
    expect(stored.spec.affinity).toBeUndefined();
    expect(stored.spec.containers[0].resources).toEqual({});
  });

  it('refuses a Deployment with an invalid template at dry-run, pointing into spec.template', async () => {
    const r = await cp.kubectl(
      ['apply', '--dry-run=server', '-f', '-'],
      deployment('bad', { hostNetwork: true }),
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(
      /admission webhook "workloads\.smcr\.erdma\.io" denied the request: \[host-network\] spec\.template\.spec\.hostNetwork/,
    );
  });

  it('mutates the pods the controllers create for a Deployment', async () => {
    const r = await cp.kubectl(['apply', '-f', '-'], deployment('web'));
    expect(r.status, r.stderr).toBe(0);
    let pods: {
      metadata: { generateName?: string; annotations?: Record<string, string> };
      spec: { containers: { resources: { limits?: Record<string, string> } }[] };
    }[] = [];
    for (let i = 0; i < 100 && pods.length < 2; i++) {
      pods = JSON.parse(
        (await cp.kubectl(['get', 'pods', '-n', 'e2e', '-l', 'app=web', '-o', 'json'])).stdout,
      ).items;
      if (pods.length < 2) await new Promise((res) => setTimeout(res, 300));
    }
    expect(pods).toHaveLength(2);
    for (const p of pods) {
      expect(p.metadata.generateName).toMatch(/^web-[a-z0-9]+-$/);
      expect(p.spec.containers[0]?.resources.limits?.['aliyun/erdma']).toBe('1');
      expect(p.metadata.annotations?.['smcr.erdma.io/settings']).toBeDefined();
    }
    expect(hook.logs()).toMatch(
      /"operation":"CREATE","kind":"Pod","namespace":"e2e","name":"web-[a-z0-9]+-\*"/,
    );
  });
});
