// Certificate bootstrap and rotation, and the live cluster view, against the real kube-apiserver
// (1.37, built from the Go module proxy). Everything runs as the webhook's ServiceAccount, with a
// real token from the TokenRequest API, under the RBAC in manifests/base: a permission we forgot
// fails here.
// Certificates are tested by using them: TLS handshakes with the caBundle the API server holds,
// and the API server itself calling the webhook across a CA rotation.
import { createServer, type Server } from 'node:https';
import { connect } from 'node:tls';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { AdmissionregistrationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KubeSecretStore,
  SecretCertManager,
  SecretCerts,
  WebhookConfigTarget,
  secretFromApi,
} from '../../../src/certs/bootstrap.js';
import { generateCA } from '../../../src/certs/pki.js';
import { serviceNames } from '../../../src/certs/x509.js';
import { SECRET_KEYS, splitPem, type RotationPolicy } from '../../../src/certs/rotation.js';
import type { KubeClient } from '../../../src/cluster/client.js';
import { loadKubeClient } from '../../../src/cluster/kubeconfig.js';
import { LiveViewSource } from '../../../src/cluster/live.js';
import { DEFAULT_PROFILE } from '../../../src/cluster/profile.js';
import {
  ensureBinaries,
  freePort,
  startControlPlane,
  type ControlPlane,
} from '../../harness/k8s/control-plane.js';
import { registration, WEBHOOK_IP } from '../../harness/registration.js';
import { startWebhookProc, type WebhookProc } from '../../harness/webhook-proc.js';
import { postH1, SNI } from '../../helpers/tls.js';
import { smcrReview } from '../../helpers/reviews.js';
import { until } from '../../helpers/wait.js';
import { requires } from '../../helpers/requires.js';

const why = requires('the certificate bootstrap suite', ensureBinaries);
const NS = 'erdma-smcr';
const SECRET = 'erdma-smcr-webhook-certs';
const [SA_NS, SA_NAME] = [NS, 'erdma-smcr-webhook'];
const SA = `system:serviceaccount:${SA_NS}:${SA_NAME}`;
const logger = pino({ level: 'silent' });
const policy: RotationPolicy = {
  names: serviceNames('erdma-smcr-webhook', NS),
  caValidityMs: 3600_000,
  certValidityMs: 600_000,
  promotionDelayMs: 1000,
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** TLS handshake as the API server does it: caBundle pinned, SNI = Service DNS name. */
function handshake(port: number, caPem: string, servername = SNI): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port, ca: caPem, servername }, () => {
      s.end();
      resolve('ok');
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

describe.skipIf(why !== '')(
  'certificates in a Secret, caBundle, and the live view (real kube-apiserver)',
  () => {
    let cp: ControlPlane;
    let kc: KubeClient;
    let admin: KubeConfig;
    let webhookPort: number;

    const store = (): KubeSecretStore => new KubeSecretStore(kc, NS, SECRET);
    const targets = (): WebhookConfigTarget[] => [
      new WebhookConfigTarget(kc, 'mutating', 'erdma-smcr'),
      new WebhookConfigTarget(kc, 'validating', 'erdma-smcr'),
    ];
    const certs = (): SecretCerts =>
      new SecretCerts({ store: store(), targets: targets(), policy, logger });
    const certManager = (
      checkIntervalMs: number,
      onServing: (cert: string) => void = () => {},
    ): SecretCertManager => {
      const m = new SecretCertManager({
        client: kc,
        namespace: NS,
        secretName: SECRET,
        store: store(),
        targets: targets(),
        policy,
        logger,
        checkIntervalMs,
      });
      m.subscribe(
        (pair) => onServing(pair.cert),
        () => undefined,
      );
      return m;
    };
    const caBundles = async (): Promise<string[]> => {
      const api = admin.makeApiClient(AdmissionregistrationV1Api);
      const m = await api.readMutatingWebhookConfiguration({ name: 'erdma-smcr' });
      const v = await api.readValidatingWebhookConfiguration({ name: 'erdma-smcr' });
      return [...(m.webhooks ?? []), ...(v.webhooks ?? [])].map((h) =>
        Buffer.from(h.clientConfig.caBundle ?? '', 'base64').toString(),
      );
    };
    const storedSecret = async () =>
      admin.makeApiClient(CoreV1Api).readNamespacedSecret({ name: SECRET, namespace: NS });
    const deleteSecret = async (): Promise<void> => {
      await cp.kubectl(['delete', 'secret', '-n', NS, SECRET, '--ignore-not-found']);
    };

    beforeAll(async () => {
      cp = await startControlPlane();
      webhookPort = await freePort();
      for (const f of ['manifests/base/namespace.yaml', 'manifests/base/webhook-rbac.yaml']) {
        const r = await cp.kubectl(['apply', '-f', f]);
        expect(r.status, r.stderr).toBe(0);
      }
      const r = await cp.kubectl(['apply', '-f', '-'], registration(webhookPort));
      expect(r.status, r.stderr).toBe(0);
      kc = await loadKubeClient(await cp.kubeconfigFor(SA_NS, SA_NAME), {});
      admin = new KubeConfig(); // the tests' own client: client-node, independent of ours
      admin.loadFromFile(cp.kubeconfig);
    }, 120_000);

    afterAll(async () => {
      await cp?.stop();
    });

    it('grants the webhook only its own Secret and webhook configurations', async () => {
      const can = async (...args: string[]): Promise<string> =>
        (await cp.kubectl(['auth', 'can-i', ...args, '--as', SA])).stdout.trim();
      expect(await can('update', `secret/${SECRET}`, '-n', NS)).toBe('yes');
      expect(await can('get', 'secret/other', '-n', NS)).toBe('no');
      expect(await can('get', 'secrets', '-n', 'kube-system')).toBe('no');
      expect(await can('update', 'mutatingwebhookconfigurations/erdma-smcr')).toBe('yes');
      expect(await can('update', 'mutatingwebhookconfigurations/someone-else')).toBe('no');
      expect(await can('delete', 'mutatingwebhookconfigurations/erdma-smcr')).toBe('no');
      expect(await can('list', 'nodes')).toBe('yes');
      expect(await can('patch', 'nodes')).toBe('no');
    });

    it('first start with no Secret: creates CA and serving certificate and sets the caBundle the API server verifies with', async () => {
      await deleteSecret();
      const e = await certs().ensure();
      expect(e.steps).toEqual(['create']);
      const s = await storedSecret();
      expect(s.type).toBe('kubernetes.io/tls');
      expect(Object.keys(s.data ?? {}).sort()).toEqual([
        'ca-signing.crt',
        'ca-signing.key',
        'ca.crt',
        'tls.crt',
        'tls.key',
      ]);
      const bundles = await caBundles();
      expect(bundles).toHaveLength(2);
      for (const b of bundles) expect(b).toBe(e.secret.data[SECRET_KEYS.bundle]);

      // Use them: a TLS server with the Secret's pair, a client pinning the caBundle from the API.
      const server: Server = createServer({
        key: e.secret.data['tls.key'],
        cert: e.secret.data['tls.crt'],
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      try {
        expect(await handshake(port, bundles[0] as string)).toBe('ok');
        expect(
          await handshake(
            port,
            bundles[0] as string,
            'erdma-smcr-webhook.erdma-smcr.svc.cluster.local',
          ),
        ).toBe('ok');
        expect(await handshake(port, bundles[0] as string, 'other.erdma-smcr.svc')).toBe(
          'ERR_TLS_CERT_ALTNAME_INVALID',
        );
        expect(await handshake(port, generateCA('stranger', { validityDays: 1 }).certPem)).toBe(
          'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
        );
      } finally {
        server.close();
      }
    });

    it('restart with a valid Secret regenerates nothing', async () => {
      const before = await storedSecret();
      const e = await certs().ensure();
      expect(e.steps).toEqual([]);
      expect((await storedSecret()).metadata?.resourceVersion).toBe(
        before.metadata?.resourceVersion,
      );
    });

    it('two replicas racing for a missing Secret: exactly one creates it, both end up serving the same certificate', async () => {
      await deleteSecret();
      const [a, b] = await Promise.all([certs().ensure(), certs().ensure()]);
      expect([...a.steps, ...b.steps]).toEqual(['create']);
      const stored = secretFromApi(await storedSecret());
      expect(a.secret.data['tls.crt']).toBe(stored.data['tls.crt']);
      expect(b.secret.data['tls.crt']).toBe(stored.data['tls.crt']);
    });

    it('repairs a caBundle someone else changed, and follows Secret changes through its watch', async () => {
      const served: string[] = [];
      const manager = certManager(300, (cert) => served.push(cert));
      try {
        await manager.start();
        const good = secretFromApi(await storedSecret()).data[SECRET_KEYS.bundle];
        const foreign = Buffer.from(generateCA('drift', { validityDays: 1 }).certPem).toString(
          'base64',
        );
        const p = await cp.kubectl([
          'patch',
          'mutatingwebhookconfiguration',
          'erdma-smcr',
          '--type=json',
          '-p',
          JSON.stringify([
            { op: 'replace', path: '/webhooks/0/clientConfig/caBundle', value: foreign },
          ]),
        ]);
        expect(p.status, p.stderr).toBe(0);
        await until('caBundle repaired', async () =>
          (await caBundles()).every((b) => b === good) ? true : undefined,
        );

        // A broken Secret (someone put a key there that does not match) is made whole, and the watch delivers the new pair.
        const wrongKey = Buffer.from(generateCA('wrong', { validityDays: 1 }).keyPem).toString(
          'base64',
        );
        const del = await cp.kubectl([
          'patch',
          'secret',
          '-n',
          NS,
          SECRET,
          '--type=json',
          '-p',
          JSON.stringify([{ op: 'replace', path: '/data/tls.key', value: wrongKey }]),
        ]);
        expect(del.status, del.stderr).toBe(0);
        await until('Secret regenerated and served', async () =>
          served.length > 0 ? true : undefined,
        );
        const now = secretFromApi(await storedSecret());
        expect(served.at(-1)).toBe(now.data['tls.crt']);
        // The old CA, still valid, stays trusted next to the new one.
        expect(splitPem(now.data[SECRET_KEYS.bundle] ?? '')).toHaveLength(2);
      } finally {
        await manager.close();
      }
    });

    it('a Secret change makes every replica re-publish the caBundle at once, not at its next timer tick', async () => {
      // The race this closes: a replica's pass reads the Secret, another replica rotates and
      // publishes, then the first publishes the bundle it read. Here the stale bundle is written by
      // hand and the Secret then changes; the timer is an hour away, so only the watch can repair it.
      const manager = certManager(3_600_000);
      try {
        await manager.start();
        const good = secretFromApi(await storedSecret()).data[SECRET_KEYS.bundle];
        await until('caBundle published', async () =>
          (await caBundles()).every((b) => b === good) ? true : undefined,
        );
        await sleep(1_500); // the pass that the watch's initial list asks for has run
        const stale = generateCA('stale', { validityDays: 1 }).certPem;
        const p = await cp.kubectl([
          'patch',
          'validatingwebhookconfiguration',
          'erdma-smcr',
          '--type=json',
          '-p',
          JSON.stringify([
            {
              op: 'replace',
              path: '/webhooks/0/clientConfig/caBundle',
              value: Buffer.from(stale).toString('base64'),
            },
          ]),
        ]);
        expect(p.status, p.stderr).toBe(0);
        await sleep(1_000);
        expect(
          (await caBundles()).some((b) => b === stale),
          'nothing should repair it before the Secret changes',
        ).toBe(true);
        const touch = await cp.kubectl([
          'annotate',
          'secret',
          '-n',
          NS,
          SECRET,
          '--overwrite',
          `test.erdma.io/touched=${Date.now()}`,
        ]);
        expect(touch.status, touch.stderr).toBe(0);
        await until(
          'caBundle repaired after the Secret changed',
          async () => ((await caBundles()).every((b) => b === good) ? true : undefined),
          10_000,
        );
      } finally {
        await manager.close();
      }
    });

    describe('the webhook process (serve --cert-source secret --cluster live)', () => {
      let hook: WebhookProc;
      let dir: string;

      beforeAll(async () => {
        await deleteSecret();
        dir = mkdtempSync(join(tmpdir(), 'rotation-'));
        // Short lifetimes so an expiry-driven CA rotation happens within the test: the CA renews at
        // two thirds of 24 s, the serving certificate every ~5 s.
        writeFileSync(
          join(dir, 'config.yaml'),
          'webhook:\n  caValiditySeconds: 24\n  certValiditySeconds: 8\n  caPromotionDelaySeconds: 2\n  certCheckIntervalSeconds: 0.5\n',
        );
        hook = await startWebhookProc(WEBHOOK_IP, [
          '-c',
          join(dir, 'config.yaml'),
          '--port',
          String(webhookPort),
          '--cert-source',
          'secret',
          '--cluster',
          'live',
          '--kubeconfig',
          await cp.kubeconfigFor(SA_NS, SA_NAME),
          '--log-level',
          'info',
        ]);
      }, 60_000);

      afterAll(async () => {
        await hook?.stop();
        if (dir) rmSync(dir, { recursive: true, force: true });
      });

      it('is ready once the cluster view has synced', async () => {
        const r = await fetch(`http://127.0.0.1:${hook.metricsPort}/readyz`);
        expect(r.status, await r.text()).toBe(200);
      });

      it('denies a pod pinned to a node whose kernel is too old, and admits it once the node is upgraded', async () => {
        const node = (kernel: string) =>
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Node',
            metadata: { name: 'ecs-old' },
            status: {
              nodeInfo: {
                kernelVersion: kernel,
                osImage: 'Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)',
                architecture: 'amd64',
                bootID: '',
                containerRuntimeVersion: '',
                kubeProxyVersion: '',
                kubeletVersion: '',
                machineID: '',
                operatingSystem: 'linux',
                systemUUID: '',
              },
            },
          });
        expect(
          (await cp.kubectl(['create', '-f', '-'], node('5.10.134-16.3.al8.x86_64'))).status,
        ).toBe(0);
        const pod = JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: 'pinned',
            namespace: 'e2e',
            annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
          },
          spec: {
            nodeName: 'ecs-old',
            automountServiceAccountToken: false,
            containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
          },
        });
        let last = '';
        const denied = await until('the webhook to see the node', async () => {
          const r = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], pod);
          last = r.stderr + r.stdout;
          return r.status !== 0 && /5\.10\.134-16/.test(r.stderr) ? r.stderr : undefined;
        }).catch((e: Error) => {
          throw new Error(`${e.message}; last answer: ${last}`);
        });
        expect(denied).toMatch(/denied the request: \[node-eligibility\].*ecs-old/);

        const api = admin.makeApiClient(CoreV1Api);
        const n = await api.readNodeStatus({ name: 'ecs-old' });
        (n.status as { nodeInfo: { kernelVersion: string } }).nodeInfo.kernelVersion =
          '5.10.134-17.3.al8.x86_64';
        await api.replaceNodeStatus({ name: 'ecs-old', body: n });
        await until('the upgrade to be seen', async () =>
          (await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], pod)).status === 0
            ? true
            : undefined,
        );
      });

      it('rotates its CA on expiry under continuous TLS load and API server admissions, failing nothing', async () => {
        // Clients behave like API servers: they trust whatever caBundle the configuration holds now.
        let bundle = '';
        let polling = true;
        const poll = (async () => {
          while (polling) {
            bundle = (await caBundles())[0] ?? '';
            await sleep(200);
          }
        })();
        await until('caBundle', async () => (bundle ? true : undefined));
        const body = JSON.stringify(smcrReview('pod-create'));
        const failures: string[] = [];
        let requests = 0;
        let admitted = 0;
        const deadline = Date.now() + 22_000;
        const client = async (): Promise<void> => {
          while (Date.now() < deadline) {
            const r = await postH1(
              { host: WEBHOOK_IP, port: hook.port },
              bundle,
              '/mutate',
              body,
            ).catch((e: Error) => ({ status: 0, body: e.message }));
            requests++;
            if (r.status !== 200) failures.push(`${r.status} ${r.body}`);
          }
        };
        const creator = async (): Promise<void> => {
          for (let i = 0; Date.now() < deadline; i++) {
            const r = await cp.kubectl(
              ['create', '-o', 'json', '-f', '-'],
              JSON.stringify({
                apiVersion: 'v1',
                kind: 'Pod',
                metadata: {
                  name: `rot-${i}`,
                  namespace: 'e2e',
                  annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
                },
                spec: {
                  automountServiceAccountToken: false,
                  containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
                },
              }),
            );
            if (r.status !== 0) failures.push(`apiserver: ${r.stderr}`);
            else if (!JSON.parse(r.stdout).metadata.annotations['smcr.erdma.io/settings'])
              failures.push(`rot-${i} not mutated`);
            else admitted++;
            await sleep(300);
          }
        };
        await Promise.all([client(), client(), client(), creator()]);
        polling = false;
        await poll;
        const metrics = await hook.metrics();
        expect(failures).toEqual([]);
        expect(requests).toBeGreaterThan(100);
        expect(admitted).toBeGreaterThan(10);
        expect(metrics).toMatch(
          /erdma_smcr_certificate_secret_steps_total\{step="add-next-ca"\} [1-9]/,
        );
        expect(metrics).toMatch(
          /erdma_smcr_certificate_secret_steps_total\{step="promote-ca"\} [1-9]/,
        );
        expect(metrics).toMatch(/erdma_smcr_certificate_reloads_total\{result="ok"\} [2-9]/);
      }, 60_000);
    });

    it('keeps serving the last good view when the API server goes away, and says so', async () => {
      let stale = false;
      const view = new LiveViewSource({
        client: kc,
        namespace: NS,
        configMap: 'erdma-smcr-cluster',
        baseProfile: DEFAULT_PROFILE,
        logger,
        onStale: (s) => (stale = s),
        backoffMs: { initial: 100, max: 500 },
      });
      try {
        expect(await view.start()).toBe(true);
        expect([...view.current().nodes].map((n) => n.name)).toContain('ecs-old');
        await cp.stop();
        await until('the view to go stale', async () => (stale ? true : undefined));
        expect(view.isStale).toBe(true);
        expect(view.current().nodesKnown).toBe(true);
        expect([...view.current().nodes].map((n) => n.name)).toContain('ecs-old');
      } finally {
        await view.close();
      }
    });
  },
);
