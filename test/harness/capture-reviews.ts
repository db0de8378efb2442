// Captures the AdmissionReviews in test/fixtures/apiserver-<version>/ from the harness's real
// kube-apiserver: a webhook registered by Service (caBundle pinned) that records each request
// body exactly as it arrived and allows it. Run by hand when the harness's Kubernetes moves:
//   npx tsx test/harness/capture-reviews.ts [OUT_DIR]
// It drives the API as a user and the controllers would: pod CREATE (also as dry-run), a pod the
// ReplicaSet controller creates, Deployment CREATE (also as dry-run), a pod UPDATE (a label), and
// what today's API adds: a pod with a native sidecar, one with pod-level resources, a resize.
import { createServer } from 'node:https';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateCA, generateServingCert } from '../../src/certs/pki.js';
import { startControlPlane } from './k8s/control-plane.js';
import { WEBHOOK_IP } from './registration.js';

const NS = 'lab';
const SVC = 'erdma-smcr-webhook.erdma-smcr.svc';
const container = {
  name: 'c',
  image: 'registry.invalid/never-pulled:1',
  command: ['sleep', '3600'],
};
const pod = (name: string, spec: Record<string, unknown> = {}): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS },
  spec: { automountServiceAccountToken: false, containers: [container], ...spec },
});

/** The fixture's file name for a review: operation, kind, what is special about it. */
function nameOf(req: {
  operation: string;
  kind: { kind: string };
  name?: string;
  subResource?: string;
  dryRun?: boolean;
}): string {
  const kind = req.kind.kind.toLowerCase();
  const parts = [kind, req.operation.toLowerCase()];
  if (req.subResource) parts.push(req.subResource);
  // The controller's pod has generateName and no name yet.
  if (kind === 'pod' && !req.name) parts.push('by-replicaset-controller');
  else if (req.name === 'probe-sidecar') parts.push('native-sidecar');
  else if (req.name === 'probe-pod-resources') parts.push('pod-level-resources');
  if (req.dryRun) parts.push('dryrun');
  return `admissionreview-${parts.join('-')}.json`;
}

async function main(): Promise<void> {
  const cp = await startControlPlane({ controllerManager: true });
  const version = JSON.parse((await cp.kubectl(['version', '-o', 'json'])).stdout) as {
    serverVersion: { gitVersion: string };
  };
  const out = process.argv[2] ?? `test/fixtures/apiserver-${version.serverVersion.gitVersion}`;
  mkdirSync(out, { recursive: true });
  const ca = generateCA('capture-ca', { validityDays: 1 });
  const serving = generateServingCert(ca, [SVC], { validityDays: 1 });
  const seen = new Map<string, string>();
  const server = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const review = JSON.parse(body) as {
        request: Parameters<typeof nameOf>[0] & { uid: string };
      };
      const file = nameOf(review.request);
      if (!seen.has(file)) seen.set(file, body);
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: true },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, WEBHOOK_IP, r));
  const port = (server.address() as { port: number }).port;
  try {
    const run = async (args: string[], input?: object): Promise<void> => {
      const r = await cp.kubectl(args, input ? JSON.stringify(input) : undefined);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    };
    const hook = (name: string, resources: string[], groups: string[]): object => ({
      name,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Fail',
      clientConfig: {
        service: { name: 'erdma-smcr-webhook', namespace: 'erdma-smcr', port, path: '/capture' },
        caBundle: Buffer.from(ca.certPem).toString('base64'),
      },
      rules: [
        { apiGroups: groups, apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources },
      ],
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
    });
    await run(['apply', '-f', '-'], {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'erdma-smcr' } },
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'erdma-smcr-webhook', namespace: 'erdma-smcr' },
          spec: { clusterIP: WEBHOOK_IP, ports: [{ port, targetPort: port }] },
        },
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'MutatingWebhookConfiguration',
          metadata: { name: 'capture' },
          webhooks: [
            hook('pods.capture.test', ['pods', 'pods/resize'], ['']),
            hook('deployments.capture.test', ['deployments'], ['apps']),
          ],
        },
      ],
    });
    await run(['create', '--dry-run=server', '-f', '-'], pod('probe-pod'));
    await run(['create', '-f', '-'], pod('probe-pod'));
    await run(['label', 'pod', '-n', NS, 'probe-pod', 'probe=updated']);
    await run(
      ['create', '-f', '-'],
      pod('probe-sidecar', {
        initContainers: [{ ...container, name: 'sidecar', restartPolicy: 'Always' }],
      }),
    );
    await run(
      ['create', '-f', '-'],
      pod('probe-pod-resources', {
        resources: {
          requests: { cpu: '100m', memory: '64Mi' },
          limits: { cpu: '200m', memory: '64Mi' },
        },
      }),
    );
    await run(
      ['create', '-f', '-'],
      pod('probe-resize', {
        containers: [
          { ...container, resources: { requests: { cpu: '100m' }, limits: { cpu: '100m' } } },
        ],
      }),
    );
    await run([
      'patch',
      'pod',
      '-n',
      NS,
      'probe-resize',
      '--subresource',
      'resize',
      '-p',
      JSON.stringify({
        spec: {
          containers: [
            { name: 'c', resources: { requests: { cpu: '200m' }, limits: { cpu: '200m' } } },
          ],
        },
      }),
    ]);
    const deploy = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'probe-deploy', namespace: NS },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'probe' } },
        template: { metadata: { labels: { app: 'probe' } }, spec: { containers: [container] } },
      },
    };
    await run(['create', '--dry-run=server', '-f', '-'], deploy);
    await run(['create', '-f', '-'], deploy);
    const deadline = Date.now() + 60_000;
    while (!seen.has('admissionreview-pod-create-by-replicaset-controller.json')) {
      if (Date.now() > deadline)
        throw new Error(`no pod from the ReplicaSet controller; seen ${[...seen.keys()]}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    for (const [file, body] of seen) writeFileSync(join(out, file), body);
    console.log(
      `${version.serverVersion.gitVersion}: wrote ${[...seen.keys()].sort().join(', ')} to ${out}`,
    );
  } finally {
    server.close();
    await cp.stop();
  }
}

await main();
