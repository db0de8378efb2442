// A real single-node cluster with erdma-smcr in the path, as the cluster suite and the pod start-up
// bench use it: kube-apiserver, controller-manager and scheduler 1.37, kubelet 1.37 and containerd
// 2 (test/harness/k8s/node.ts), our manifests' objects but the PDB (the webhook Deployment and the
// agent DaemonSet run as processes: the webhook in secret mode with the live view, on the
// Service's ClusterIP; the agent, with the device plugin in it, inside the node), each with its
// ServiceAccount token. Everything runs in a network namespace of its own; stop() removes it all.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { buildBusyboxImage } from '../containerd.js';
import { cleanupNetns, createNetns } from '../../helpers/netns.js';
import { until } from '../../helpers/wait.js';
import { startWebhookProc, type WebhookProc } from '../webhook-proc.js';
import { KUBECTL, startControlPlane, type ControlPlane } from './control-plane.js';
import { writeFakeProc, writeHostTree } from './host-tree.js';
import { startNode, type KubeNode } from './node.js';

export const APP = 'erdma-smcr.test/app:1';
export const PAUSE = 'erdma-smcr.test/pause:1';

export interface SingleNodeOptions {
  readonly node: string;
  readonly nodeIp: string;
  /** The agent's `resources` (default: aliyun/erdma for eRDMA devices). */
  readonly resources?: readonly object[];
  /** Whether the agent serves aliyun/erdma with its device plugin (default true; false for DRA). */
  readonly devicePlugin?: boolean;
  /**
   * Our DRA driver too (`erdma-smcr dra-plugin` in the node, with manifests/components/dra's RBAC
   * and DeviceClass): start resolves once its ResourceSlice is published.
   */
  readonly dra?: boolean;
  /** Condition the node must meet before start resolves, beyond Ready, capable and aliyun/erdma. */
  readonly nodeReady?: (node: { status: { capacity?: Record<string, string> } }) => boolean;
}

export interface SingleNode {
  readonly dir: string;
  readonly cp: ControlPlane;
  readonly node: KubeNode;
  readonly hook: WebhookProc;
  readonly hostRoot: string;
  /** Where containerd reads CDI specs (our DRA driver writes them there). */
  readonly cdiDir: string;
  /** Starts our DRA driver in the node (again, after stopDra); resolves once it is running. */
  startDra(): Promise<void>;
  /** Stops it with SIGTERM, as the kubelet stops its pod. */
  stopDra(): Promise<void>;
  /**
   * Restarts the agent with its device plugin on or off (the node's device path changing), and
   * `agent` keys of its configuration to add (takeOverResources).
   */
  restartAgent(devicePlugin: boolean, extra?: Record<string, unknown>): Promise<void>;
  stop(): Promise<void>;
}

/** The objects of manifests/components/dra the driver needs through the API (not its DaemonSet). */
function draObjects(): { kind: string; metadata: { name: string } }[] {
  const rendered = execFileSync(KUBECTL, ['kustomize', 'manifests/overlays/dra'], {
    encoding: 'utf8',
  });
  return (yaml.loadAll(rendered) as { kind: string; metadata: { name: string } }[]).filter(
    (o) =>
      (['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind) &&
        o.metadata.name === 'erdma-smcr-dra') ||
      o.kind === 'DeviceClass',
  );
}

/** The objects of manifests/base this cluster runs through the API (not its workloads). */
const KEEP = new Set([
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ConfigMap',
  'Service',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
]);

export async function startSingleNode(o: SingleNodeOptions): Promise<SingleNode> {
  const dir = mkdtempSync(join(tmpdir(), 'cluster-'));
  let cp: ControlPlane | undefined;
  let node: KubeNode | undefined;
  let hook: WebhookProc | undefined;
  let dra: ChildProcess | undefined;
  let agent: ChildProcess | undefined;
  let restartAgent: (
    devicePlugin: boolean,
    extra?: Record<string, unknown>,
  ) => Promise<void> = async () => undefined;
  const stopDra = async (): Promise<void> => {
    const p = dra;
    dra = undefined;
    if (!p || p.exitCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await gone;
  };
  const stop = async (): Promise<void> => {
    await stopDra();
    await hook?.stop();
    await node?.stop();
    await cp?.stop();
    cleanupNetns();
    if (!process.env.ERDMA_SMCR_KEEP_K8S) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ns = createNetns('cluster');
    cp = await startControlPlane({ controllerManager: true, scheduler: true, netns: ns.path });
    const control = cp;
    const kubectl = async (...args: string[]): Promise<string> => {
      const r = await control.kubectl(args);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    // Validated by kubectl as an admin's apply would be.
    const rendered = execFileSync(KUBECTL, ['kustomize', 'manifests/base'], { encoding: 'utf8' });
    const objects = (yaml.loadAll(rendered) as { kind: string }[]).filter((x) => KEEP.has(x.kind));
    const applied = await cp.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
    );
    if (applied.status !== 0) throw new Error(`applying the base's objects: ${applied.stderr}`);
    await kubectl('create', 'namespace', 'apps');
    const svc = JSON.parse(
      await kubectl('get', '-o', 'json', 'service', '-n', 'erdma-smcr', 'erdma-smcr-webhook'),
    ) as { spec: { clusterIP: string } };

    // Our webhook, on the Service's ClusterIP (a loopback address in this cluster), port 443.
    hook = await startWebhookProc(
      svc.spec.clusterIP,
      [
        '--port',
        '443',
        '--cert-source',
        'secret',
        '--cluster',
        'live',
        '--kubeconfig',
        await cp.kubeconfigFor('erdma-smcr', 'erdma-smcr-webhook'),
      ],
      ns.path,
    );

    // The node's host tree as the agent sees it (test/harness/k8s/host-tree.ts).
    const hostRoot = join(dir, 'host');
    writeHostTree(hostRoot, { ipamDir: join(dir, 'ipam'), podCidr: '10.244.0.0/24' });
    const proc = join(dir, 'proc');
    writeFakeProc(proc);
    buildBusyboxImage(PAUSE, join(dir, 'pause.tar'), ['/bin/sleep', '2147483647']);
    buildBusyboxImage(APP, join(dir, 'app.tar'), ['/bin/sleep', '2147483647']);
    node = await startNode({
      cp,
      name: o.node,
      ip: o.nodeIp,
      dir: join(dir, 'node'),
      hostRoot,
      sandboxImage: PAUSE,
      images: [join(dir, 'pause.tar'), join(dir, 'app.tar')],
    });
    const agentConfig = (devicePlugin: boolean, extra: Record<string, unknown> = {}): void =>
      writeFileSync(
        join(dir, 'agent.yaml'),
        yaml.dump({
          agent: {
            procRoot: proc,
            deviceRoot: hostRoot,
            lateApply: false,
            refreshMs: 1000,
            podGraceMs: 5000,
            metricsPort: 0,
            pollMs: 500,
            devicePlugin,
            resources: o.resources ?? [{ name: 'aliyun/erdma', selector: { vendors: ['0x1ded'] } }],
            ...extra,
          },
        }),
      );
    const agentToken = await cp.kubeconfigFor('erdma-smcr', 'erdma-smcr-agent');
    const spawnAgent = (): ChildProcess =>
      node!.spawnInNode(
        process.execPath,
        [
          join(process.cwd(), 'bin/erdma-smcr.js'),
          '-c',
          join(dir, 'agent.yaml'),
          'agent',
          '--host-root',
          hostRoot,
          '--node-name',
          o.node,
          '--kubeconfig',
          agentToken,
        ],
        'agent',
      );
    agentConfig(o.devicePlugin ?? true);
    agent = spawnAgent();
    restartAgent = async (
      devicePlugin: boolean,
      extra?: Record<string, unknown>,
    ): Promise<void> => {
      const p = agent;
      if (p && p.exitCode === null) {
        const gone = new Promise((r) => p.once('exit', r));
        p.kill('SIGTERM');
        await gone;
      }
      agentConfig(devicePlugin, extra);
      agent = spawnAgent();
    };
    const started = node;
    await until(
      o.devicePlugin === false
        ? 'node Ready, labelled capable'
        : 'node Ready, labelled capable, with aliyun/erdma capacity',
      async () => {
        const n = JSON.parse(await kubectl('get', '-o', 'json', 'node', o.node)) as {
          metadata: { labels?: Record<string, string> };
          status: {
            conditions?: { type: string; status: string }[];
            allocatable?: Record<string, string>;
            capacity?: Record<string, string>;
          };
        };
        return (
          n.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True' &&
          n.metadata.labels?.['smcr.erdma.io/capable'] === 'true' &&
          (o.devicePlugin === false || Number(n.status.allocatable?.['aliyun/erdma'] ?? 0) > 0) &&
          (o.nodeReady?.(n) ?? true)
        );
      },
      {
        timeoutMs: 120_000,
        intervalMs: 300,
        retryErrors: true,
        details: () =>
          `--- kubelet ---\n${started.logs('kubelet').slice(-3000)}\n--- agent ---\n${started.logs('agent').slice(-2000)}`,
      },
    );
    const cdiDir = started.containerd.cdiSpecDirs[0]!;
    // The DRA driver's token, bound to a pod of its own on the node as the DaemonSet's is (the
    // API server lets a driver write a claim's device status only on its own node: the token's
    // node name). The pod is the pause image on the host network: nothing of ours acts on it.
    const draPod = `erdma-smcr-dra-${o.node}`.slice(0, 63);
    const draToken = async (): Promise<string> => {
      const r = await control.kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: draPod, namespace: 'erdma-smcr' },
          spec: {
            nodeName: o.node,
            hostNetwork: true,
            serviceAccountName: 'erdma-smcr-dra',
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 0,
            containers: [{ name: 'pause', image: PAUSE, imagePullPolicy: 'Never' }],
          },
        }),
      );
      if (r.status !== 0) throw new Error(`the DRA driver's pod: ${r.stderr}`);
      return control.kubeconfigFor('erdma-smcr', 'erdma-smcr-dra', draPod);
    };
    const startDra = async (): Promise<void> => {
      const kubeconfig = await draToken();
      dra = started.spawnInNode(
        process.execPath,
        [
          join(process.cwd(), 'bin/erdma-smcr.js'),
          '-c',
          join(dir, 'dra.yaml'),
          'dra-plugin',
          '--host-root',
          hostRoot,
          '--node-name',
          o.node,
          '--cdi-dir',
          cdiDir,
          '--kubeconfig',
          kubeconfig,
        ],
        'dra',
      );
    };
    if (o.dra) {
      const objects = draObjects();
      const r = await cp.kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
      );
      if (r.status !== 0) throw new Error(`applying the DRA component's objects: ${r.stderr}`);
      writeFileSync(
        join(dir, 'dra.yaml'),
        yaml.dump({ agent: { deviceRoot: hostRoot, pollMs: 500, metricsPort: 0 } }),
      );
      await startDra();
      await until(
        'our ResourceSlice published',
        async () => {
          const slices = JSON.parse(
            await kubectl(
              'get',
              '-o',
              'json',
              'resourceslices',
              '--field-selector',
              `spec.nodeName=${o.node}`,
            ),
          ) as { items: { spec: { driver: string; devices: unknown[] } }[] };
          return slices.items.some(
            (x) => x.spec.driver === 'erdma.smcr.erdma.io' && x.spec.devices.length > 0,
          );
        },
        {
          timeoutMs: 90_000,
          intervalMs: 300,
          retryErrors: true,
          details: () => `--- dra ---\n${started.logs('dra').slice(-3000)}`,
        },
      );
    }
    return {
      dir,
      cp,
      node,
      hook,
      hostRoot,
      cdiDir,
      startDra,
      stopDra,
      restartAgent: (devicePlugin, extra) => restartAgent(devicePlugin, extra),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
