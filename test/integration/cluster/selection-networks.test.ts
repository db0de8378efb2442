// The SMC selection's networks where ACK runs (#100), on the real kube-apiserver 1.37 with its
// controller-manager: a Terway-shaped node (no podCIDRs) whose agent reads its ENIs' vSwitch
// CIDRs from the ECS metadata service (test/harness/metadata-server.mjs, the stand-in the agent
// suites use: nothing real answers 100.100.100.200 here) and publishes them on its Node; the
// ServiceCIDR objects (the API server's default, one created later and removed); a node added
// later. Our webhook (`serve --cluster live`) watches them all, and an annotated pod at
// `kubectl apply --dry-run=server` gets a selection holding the vSwitch and Service ranges, never
// Alibaba Cloud's service range 100.100.0.0/16 nor the private-range fallback.
import { spawn } from 'node:child_process';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeLabeler } from '../../../src/agent/node/labels.js';
import { MetadataClient } from '../../../src/agent/network/ecs-metadata.js';
import { PodNetworksDuty, secondaryVswitchCidrs } from '../../../src/agent/network/pod-networks.js';
import { loadKubeClient } from '../../../src/cluster/kubeconfig.js';
import { LiveViewSource } from '../../../src/cluster/live.js';
import { DEFAULT_PROFILE } from '../../../src/cluster/profile.js';
import { selectionNetworks } from '../../../src/policy/selection.js';
import {
  ensureBinaries,
  SERVICE_CIDR,
  startControlPlane,
  type ControlPlane,
} from '../../harness/k8s/control-plane.js';
import { registration, WEBHOOK_IP } from '../../harness/registration.js';
import { startWebhookProc, type WebhookProc } from '../../harness/webhook-proc.js';
import { e2ePod } from '../../helpers/e2e-pod.js';
import { requires } from '../../helpers/requires.js';
import { until } from '../../helpers/wait.js';

const why = requires('the selection networks suite (kube-apiserver 1.37)', ensureBinaries);

const PRIMARY = '00:16:3e:00:00:01';
/** Terway's pod ENIs: two vSwitches of the VPC; the primary's vSwitch is the nodes'. */
const ENIS = {
  [PRIMARY]: { address: '10.0.0.10', cidr: '10.0.0.0/24', gateway: '10.0.0.253' },
  '00:16:3e:00:00:02': { address: '10.0.64.5', cidr: '10.0.64.0/18', gateway: '10.0.127.253' },
  '00:16:3e:00:00:03': { address: '10.0.128.9', cidr: '10.0.128.0/18', gateway: '10.0.191.253' },
};

/** The capable, preload-mechanism labels an agent writes on an eRDMA node. */
const LABELS = {
  'smcr.erdma.io/erdma-node': 'true',
  'smcr.erdma.io/capable': 'true',
  'smcr.erdma.io/driver-mode': 'default',
  'smcr.erdma.io/mechanism': 'preload',
  'smcr.erdma.io/selection': 'enforced',
};

describe.skipIf(why !== '')('the SMC selection takes the networks the cluster says (#100)', () => {
  let cp: ControlPlane;
  let hook: WebhookProc;
  let metadata: ReturnType<typeof spawn> | undefined;
  let metadataUrl = '';

  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const r = await cp.kubectl(args, input);
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const node = (name: string, annotations: Record<string, string> = {}) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: LABELS, annotations },
    });
  /** The selection the webhook writes on an annotated pod: its settings' nets, and the preload env. */
  const selection = async (): Promise<{ settings: string; env: string }> => {
    const out = JSON.parse(
      await kubectl(
        ['apply', '--dry-run=server', '-o', 'json', '-f', '-'],
        e2ePod('probe', { 'network.alibabacloud.com/erdma-smcr': 'true' }),
      ),
    );
    const env = (out.spec.containers[0].env ?? []) as { name: string; value: string }[];
    return {
      settings: out.metadata.annotations['smcr.erdma.io/settings'] as string,
      env: env.find((e) => e.name === 'ERDMA_SMCR_SELECT')?.value ?? '',
    };
  };
  const nets = (select: string): string[] => /nets=([^;]*)/.exec(select)?.[1]?.split(',') ?? [];

  beforeAll(async () => {
    metadata = spawn(
      process.execPath,
      [
        'test/harness/metadata-server.mjs',
        JSON.stringify({ port: 0, host: '127.0.0.1', primaryMac: PRIMARY, enis: ENIS }),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const port = await new Promise<string>((resolve) =>
      metadata!.stdout!.once('data', (d: Buffer) => resolve(String(d).split(' ')[1]!.trim())),
    );
    metadataUrl = `http://127.0.0.1:${port}`;
    cp = await startControlPlane({ controllerManager: true });
    hook = await startWebhookProc(WEBHOOK_IP, [
      '--log-level',
      'info',
      '--cluster',
      'live',
      '--kubeconfig',
      cp.kubeconfig,
    ]);
    await kubectl(['apply', '-f', '-'], registration(hook.port, hook.caPem));
    await kubectl(['apply', '-f', '-'], node('terway-a'));
  }, 180_000);

  afterAll(async () => {
    metadata?.kill('SIGKILL');
    await Promise.all([cp?.stop(), hook?.stop()]);
  });

  it("reads the secondary ENIs' vSwitch CIDRs from the metadata service, not the primary's", async () => {
    const client = new MetadataClient({ baseUrl: metadataUrl, timeoutMs: 1000, retries: 0 });
    expect(await client.macs()).toEqual(Object.keys(ENIS));
    expect(await secondaryVswitchCidrs(client)).toEqual(['10.0.128.0/18', '10.0.64.0/18']);
  });

  it("publishes them on the agent's Node, and the webhook's selection holds them and the Service range", async () => {
    // Before: a Terway node says nothing; the Service range alone is what the cluster says.
    const before = await selection();
    expect(nets(before.env)).toEqual([SERVICE_CIDR]);

    const kc = await loadKubeClient(cp.kubeconfig, {});
    const duty = new PodNetworksDuty({
      metadata: { baseUrl: metadataUrl, timeoutMs: 1000, retries: 0 },
      labeler: new NodeLabeler(kc, 'terway-a', pino({ level: 'silent' })),
      logger: pino({ level: 'silent' }),
    });
    await duty.pass();
    const annotations = JSON.parse(await kubectl(['get', 'node', 'terway-a', '-o', 'json']))
      .metadata.annotations;
    expect(annotations['smcr.erdma.io/pod-networks']).toBe('10.0.128.0/18,10.0.64.0/18');

    const after = await until('the vSwitches in the selection', async () => {
      const s = await selection();
      return nets(s.env).length === 3 ? s : undefined;
    });
    console.log(`selection on a Terway-shaped cluster: ${after.env}`);
    expect(nets(after.env)).toEqual(['10.0.128.0/18', '10.0.64.0/18', SERVICE_CIDR]);
    // The CNI plugin's copy (smc_hs_ctrl's map is filled from it) says the same.
    expect(after.settings).toContain(after.env);
    for (const s of [after.env, after.settings]) {
      expect(s).not.toMatch(/100\.100\.|100\.64\.0\.0\/1[01]|10\.0\.0\.0\/8/);
    }
  });

  it('follows ServiceCIDR objects created and removed, and a node added later', async () => {
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'ServiceCIDR',
        metadata: { name: 'more-services' },
        spec: { cidrs: ['192.168.240.0/20'] },
      }),
    );
    await until('the new ServiceCIDR in the selection', async () =>
      nets((await selection()).env).includes('192.168.240.0/20') ? true : undefined,
    );
    await kubectl(
      ['apply', '-f', '-'],
      node('terway-b', { 'smcr.erdma.io/pod-networks': '10.1.0.0/18' }),
    );
    const withB = await until('the later node in the selection', async () => {
      const s = await selection();
      return nets(s.env).includes('10.1.0.0/18') ? s : undefined;
    });
    expect(nets(withB.env)).toEqual([
      '10.0.128.0/18',
      '10.0.64.0/18',
      '10.1.0.0/18',
      SERVICE_CIDR,
      '192.168.240.0/20',
    ]);
    // Removed (the controller-manager takes its finalizer off: no Service uses it), it goes.
    await kubectl(['delete', 'servicecidr', 'more-services', '--wait=true', '--timeout=60s']);
    await until('the removed ServiceCIDR out of the selection', async () =>
      nets((await selection()).env).includes('192.168.240.0/20') ? undefined : true,
    );
  }, 120_000);

  it('an install whose RBAC cannot list ServiceCIDRs is ready, not stale, and selects without them', async () => {
    // What an install from before #100 runs as: nodes and its ConfigMap, no servicecidrs.
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'v1',
            kind: 'ServiceAccount',
            metadata: { name: 'old-webhook', namespace: 'erdma-smcr' },
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRole',
            metadata: { name: 'old-webhook' },
            rules: [
              {
                apiGroups: [''],
                resources: ['nodes', 'configmaps'],
                verbs: ['get', 'list', 'watch'],
              },
            ],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: 'old-webhook' },
            roleRef: {
              apiGroup: 'rbac.authorization.k8s.io',
              kind: 'ClusterRole',
              name: 'old-webhook',
            },
            subjects: [{ kind: 'ServiceAccount', name: 'old-webhook', namespace: 'erdma-smcr' }],
          },
        ],
      }),
    );
    const client = await loadKubeClient(await cp.kubeconfigFor('erdma-smcr', 'old-webhook'), {});
    const view = new LiveViewSource({
      client,
      namespace: 'erdma-smcr',
      configMap: 'erdma-smcr-cluster-profile',
      baseProfile: DEFAULT_PROFILE,
      logger: pino({ level: 'silent' }),
      backoffMs: { initial: 100, max: 500 },
    });
    try {
      expect(await view.start(10_000)).toBe(true);
      expect(view.synced).toBe(true);
      await new Promise((r) => setTimeout(r, 1000));
      expect(view.isStale).toBe(false);
      const nets = selectionNetworks(view.current());
      expect(nets).toContain('10.0.64.0/18');
      expect(nets).not.toContain(SERVICE_CIDR);
    } finally {
      await view.close();
    }
  });
});
