// The shipped kustomizations render with kustomize v5 (test/harness/kustomize.ts: Debian trixie's,
// as kubectl 1.27 and later embed it) with no warning, every
// object passes the Kubernetes OpenAPI schema (kubernetes-models; cert-manager's CRD schemas for
// its kinds), and the manifests agree with the code: ports, paths, names, labels, env vars.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/admission/app.js';
import { WebhookMetrics } from '../../../src/admission/metrics.js';
import { StaticViewSource } from '../../../src/cluster/view.js';
import { ENV_VARS, loadConfig } from '../../../src/config/load.js';
import { EXCLUDED_NAMESPACES, NODE_LABELS, SMCR_ANNOTATION } from '../../../src/constants.js';
import { PROFILE_KEY } from '../../../src/cluster/live.js';
import { parseProfile } from '../../../src/cluster/profile.js';
import { silentLogger } from '../../helpers/reviews.js';
import { NodeIndex } from '../../../src/policy/nodes.js';
import { requires, root } from '../../helpers/requires.js';
import { kustomizeBuild } from '../../harness/kustomize.js';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
};
const why = requires('the manifests suite (kustomize in a trixie chroot)', root);

/** What users build: no deprecated field (v5 warns of `bases`, `patchesStrategicMerge`, ...). */
function render(dir: string): Obj[] {
  const r = kustomizeBuild(dir);
  if (r.status !== 0) throw new Error(`kustomize build ${dir}: ${r.stderr}`);
  expect(r.stderr, `kustomize build ${dir} warned`).toBe('');
  return yaml.loadAll(r.stdout) as Obj[];
}

/** The model class for apiVersion/kind from kubernetes-models (or cert-manager's models). */
async function modelFor(
  o: Obj,
): Promise<(new (data: unknown) => { validate(): void }) | undefined> {
  const [group = '', version = ''] = o.apiVersion.includes('/')
    ? o.apiVersion.split('/')
    : ['', o.apiVersion];
  const mod = group.endsWith('cert-manager.io')
    ? await import(`@kubernetes-models/cert-manager/${group}/${version}`)
    : await import(
        group === '' ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`
      );
  return (mod as Record<string, new (data: unknown) => { validate(): void }>)[o.kind];
}

const config = loadConfig({});

/**
 * What V8 on Node 20 says when lite mode switches WebAssembly off: the one line a daemon's start
 * may write to stderr.
 */
const LITE_MODE_WARNING = /^Warning: disabling flag --expose_wasm due to conflicting flags\n/gm;

/**
 * Node starts with these NODE_OPTIONS (it refuses to start on a flag not allowed there) and these
 * flags on its command line (it exits 9 on a flag V8 does not know). Run with this machine's node;
 * the image's accepts the same flags (`npm run bench memory` runs both, and the in-cluster suite
 * runs the manifests in the image).
 */
function expectNodeStarts(nodeOptions: string, flags: string[] = []): void {
  const r = spawnSync(process.execPath, [...flags, '-e', '0'], {
    env: { PATH: process.env.PATH, NODE_OPTIONS: nodeOptions },
    encoding: 'utf8',
  });
  expect(r.stderr.replace(LITE_MODE_WARNING, '')).toBe('');
  expect(r.status).toBe(0);
}
// Rendered objects are walked freely below; the schema test above is what types them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = Obj & Record<string, any>;
const find = (objs: Obj[], kind: string, name: string): Loose => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} not rendered`);
  return o as Loose;
};

describe.skipIf(why !== '')('manifests', () => {
  const base = why ? [] : render('manifests/base');
  const certManager = why ? [] : render('manifests/overlays/cert-manager');
  const matchConditions = why ? [] : render('manifests/overlays/match-conditions');

  it.each([
    ['base', () => base],
    ['cert-manager overlay', () => certManager],
    ['match-conditions overlay', () => matchConditions],
  ])('%s: every object passes its Kubernetes OpenAPI schema', async (_name, objs) => {
    const list = objs();
    expect(list.length).toBeGreaterThan(10);
    for (const o of list) {
      const Model = await modelFor(o);
      expect(Model, `${o.apiVersion} ${o.kind} has a schema`).toBeDefined();
      expect(
        () => new (Model as NonNullable<typeof Model>)(o).validate(),
        `${o.kind}/${o.metadata.name}`,
      ).not.toThrow();
    }
  });

  it('schema validation catches a broken object (the check can fail)', async () => {
    const d = structuredClone(find(base, 'Deployment', 'erdma-smcr-webhook'));
    d.spec.replicas = 'two';
    const Model = await modelFor(d);
    expect(() => new (Model as NonNullable<typeof Model>)(d).validate()).toThrow();
  });

  it('webhook Deployment: ports, probes and hardening match the server', async () => {
    const d = find(base, 'Deployment', 'erdma-smcr-webhook');
    const c = d.spec.template.spec.containers[0];
    const ports = Object.fromEntries(
      c.ports.map((p: { name: string; containerPort: number }) => [p.name, p.containerPort]),
    );
    const arg = (flag: string): string => c.args[c.args.indexOf(flag) + 1];
    expect(Number(arg('--port'))).toBe(ports.https);
    expect(arg('--cert-source')).toBe('secret');
    expect(arg('--cluster')).toBe('live');
    const env = Object.fromEntries(
      c.env.map((e: { name: string; value?: string }) => [e.name, e.value]),
    );
    // NODE_OPTIONS is Node's own; it must hold only flags Node accepts there, or Node refuses to start.
    expect(env.NODE_OPTIONS).toMatch(
      /^--max-semi-space-size=\d+ --max-old-space-size=\d+ --use-openssl-ca --no-node-snapshot$/,
    );
    // V8's flags are not allowed in NODE_OPTIONS: the image's node, with the image's entrypoint.
    expect(c.command).toEqual([
      'node',
      '--no-maglev',
      '--no-icu-timezone-data',
      '/app/bin/erdma-smcr.js',
    ]);
    expectNodeStarts(env.NODE_OPTIONS, c.command.slice(1, -1));
    for (const name of Object.keys(env))
      if (name !== 'NODE_OPTIONS')
        expect(ENV_VARS, `${name} is read by the code`).toHaveProperty(name);
    expect(Number(env.ERDMA_SMCR_METRICS_PORT)).toBe(ports.metrics);
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(d.spec.replicas).toBe(2);
    expect(d.spec.template.spec.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(d.spec.template.spec.serviceAccountName).toBe('erdma-smcr-webhook');
    const pdb = find(base, 'PodDisruptionBudget', 'erdma-smcr-webhook');
    expect(pdb.spec.selector.matchLabels).toEqual(d.spec.selector.matchLabels);
    expect(
      d.spec.template.spec.affinity.podAntiAffinity
        .preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector
        .matchLabels,
    ).toEqual(d.spec.selector.matchLabels);
  });

  it('Service and webhook configurations reach the routes the server has, under the names the code manages', async () => {
    const svc = find(base, 'Service', config.webhook.serviceName);
    expect(svc.metadata.namespace).toBe(config.webhook.namespace);
    expect(svc.spec.ports[0].targetPort).toBe('https');
    const app = buildApp({
      config,
      views: new StaticViewSource({ nodesKnown: false, nodes: new NodeIndex() }),
      metrics: new WebhookMetrics({ defaultMetrics: false }),
      logger: silentLogger,
      readiness: () => '',
    });
    const m = find(
      base,
      'MutatingWebhookConfiguration',
      config.webhook.mutatingWebhookConfiguration,
    );
    const v = find(
      base,
      'ValidatingWebhookConfiguration',
      config.webhook.validatingWebhookConfiguration,
    );
    for (const [cfg, path] of [
      [m, '/mutate'],
      [v, '/validate'],
    ] as const) {
      const hook = cfg.webhooks[0];
      expect(hook.clientConfig.service).toEqual({
        name: svc.metadata.name,
        namespace: svc.metadata.namespace,
        path,
        port: svc.spec.ports[0].port,
      });
      expect(app.hasRoute({ method: 'POST', url: path })).toBe(true);
      expect(hook).toMatchObject({
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        failurePolicy: 'Ignore',
      });
      expect(hook.timeoutSeconds).toBeGreaterThan(0);
      expect(hook.namespaceSelector.matchExpressions[0].values).toEqual([
        'kube-system',
        config.webhook.namespace,
      ]);
      // check applies the same exclusions offline.
      expect(hook.namespaceSelector.matchExpressions[0].values).toEqual(EXCLUDED_NAMESPACES);
      // The base must apply on API servers without matchConditions (before 1.27): no such field.
      expect(hook.matchConditions).toBeUndefined();
      const withConditions = find(matchConditions, cfg.kind, cfg.metadata.name).webhooks[0];
      expect(withConditions.matchConditions[0].expression).toContain(`'${SMCR_ANNOTATION}'`);
      // The overlay adds matchConditions, and fails closed for pods only (docs/webhook.md says why).
      const failurePolicy = cfg.kind === 'MutatingWebhookConfiguration' ? 'Fail' : 'Ignore';
      expect(withConditions.failurePolicy).toBe(failurePolicy);
      expect({ ...withConditions, matchConditions: undefined, failurePolicy: undefined }).toEqual({
        ...hook,
        matchConditions: undefined,
        failurePolicy: undefined,
      });
    }
    expect(m.webhooks[0].reinvocationPolicy).toBe('IfNeeded');
    // UPDATE too: the webhook puts its settings annotation back and checks changed tuning (docs/policy.md).
    expect(m.webhooks[0].rules).toEqual([
      {
        apiGroups: [''],
        apiVersions: ['v1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['pods'],
        scope: 'Namespaced',
      },
    ]);
    await app.close();
  });

  it('webhook RBAC names exactly what the code uses', () => {
    const role = find(base, 'Role', 'erdma-smcr-webhook');
    const names = role.rules.flatMap((r: { resourceNames?: string[] }) => r.resourceNames ?? []);
    expect(names.sort()).toEqual([config.cluster.configMap, config.webhook.secretName].sort());
    const cr = find(base, 'ClusterRole', 'erdma-smcr-webhook');
    const hooks = cr.rules.find(
      (r: { apiGroups: string[] }) => r.apiGroups[0] === 'admissionregistration.k8s.io',
    );
    expect(hooks.resourceNames).toEqual([config.webhook.mutatingWebhookConfiguration]);
    expect(hooks.verbs).toEqual(['get', 'update']);
    const profile = find(base, 'ConfigMap', config.cluster.configMap);
    expect(parseProfile(yaml.load(profile.data[PROFILE_KEY]), 'configmap')).toEqual({
      apiVersion: 'smcr.erdma.io/v1alpha1',
      kind: 'ClusterProfile',
      driverMode: 'default',
      ipFamilies: ['IPv4'],
    });
  });

  it('device-plugin DaemonSet: its own lifecycle (OnDelete), sysfs, the kubelet dir and its state dir, nothing more', () => {
    const ds = find(base, 'DaemonSet', 'erdma-smcr-device-plugin');
    const spec = ds.spec.template.spec;
    const c = spec.containers[0];
    expect(ds.spec.updateStrategy).toEqual({ type: 'OnDelete' });
    expect(c.args).toEqual(['device-plugin']);
    // As the agent's (below).
    expect(c.command).toEqual(
      find(base, 'DaemonSet', 'erdma-smcr-agent').spec.template.spec.containers[0].command,
    );
    const env = Object.fromEntries(
      c.env.map((e: { name: string; value?: string }) => [e.name, e.value]),
    );
    expect(env.NODE_OPTIONS).toMatch(
      /^--max-semi-space-size=\d+ --use-openssl-ca --no-node-snapshot$/,
    );
    expectNodeStarts(env.NODE_OPTIONS, c.command.slice(1, -1));
    for (const name of Object.keys(env))
      if (name !== 'NODE_OPTIONS')
        expect(ENV_VARS, `${name} is read by the code`).toHaveProperty(name);
    expect(Number(env.ERDMA_SMCR_AGENT_METRICS_PORT)).toBe(c.readinessProbe.httpGet.port);
    expect(Number(env.ERDMA_SMCR_AGENT_METRICS_PORT)).not.toBe(config.agent.metricsPort);
    const mounts = Object.fromEntries(
      c.volumeMounts.map((m: { name: string; mountPath: string }) => [m.mountPath, m.name]),
    );
    const hostPathOf = (mountPath: string): string =>
      spec.volumes.find((v: { name: string }) => v.name === mounts[mountPath]).hostPath.path;
    expect(hostPathOf(join(env.ERDMA_SMCR_HOST_ROOT as string, '/sys'))).toBe('/sys');
    const dp = join(config.agent.kubeletDir, 'device-plugins');
    expect(hostPathOf(dp)).toBe(dp);
    // Where it tells the agent what it holds back for another registrant (the agent reads it).
    const state = dirname(config.agent.devicePluginStateFile);
    expect(hostPathOf(join(env.ERDMA_SMCR_HOST_ROOT as string, state))).toBe(state);
    expect(Object.keys(mounts)).toHaveLength(3);
    expect(spec.hostNetwork).toBeUndefined();
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(c.securityContext.capabilities).toEqual({ drop: ['ALL'] });
    // On the same nodes as the agent.
    expect(spec.nodeSelector).toEqual(
      find(base, 'DaemonSet', 'erdma-smcr-agent').spec.template.spec.nodeSelector,
    );
  });

  it('agent DaemonSet: mounts where the code looks, env the code reads, probes on its port', () => {
    const ds = find(base, 'DaemonSet', 'erdma-smcr-agent');
    const spec = ds.spec.template.spec;
    const c = spec.containers[0];
    const env = Object.fromEntries(
      c.env.map((e: { name: string; value?: string }) => [e.name, e.value]),
    );
    // NODE_OPTIONS is Node's own; it must hold only flags Node accepts there, or Node refuses to start.
    expect(env.NODE_OPTIONS).toMatch(
      /^--max-semi-space-size=\d+ --use-openssl-ca --no-node-snapshot$/,
    );
    for (const name of Object.keys(env))
      if (name !== 'NODE_OPTIONS')
        expect(ENV_VARS, `${name} is read by the code`).toHaveProperty(name);
    // V8's flags are not allowed in NODE_OPTIONS: the image's node, with the image's entrypoint.
    expect(c.command).toEqual([
      'node',
      '--lite-mode',
      '--no-icu-timezone-data',
      '--no-compilation-cache',
      '/app/bin/erdma-smcr.js',
    ]);
    expectNodeStarts(env.NODE_OPTIONS, c.command.slice(1, -1));
    const a = config.agent;
    const hostRoot = env.ERDMA_SMCR_HOST_ROOT as string;
    const mounts = Object.fromEntries(
      c.volumeMounts.map((m: { name: string; mountPath: string }) => [m.mountPath, m.name]),
    );
    const hostPathOf = (mountPath: string): string =>
      spec.volumes.find((v: { name: string }) => v.name === mounts[mountPath]).hostPath.path;
    for (const p of [a.cniConfDir, a.cniBinDir, a.cniStateDir, '/sys'])
      expect(hostPathOf(join(hostRoot, p))).toBe(p);
    for (const f of [a.pnetIdFile, a.cniLogFile]) {
      const dir = f.slice(0, f.lastIndexOf('/'));
      expect(hostPathOf(join(hostRoot, dir))).toBe(dir);
    }
    // The pin directory's bpffs and the preload library's directory.
    expect(hostPathOf(join(hostRoot, '/sys/fs/bpf'))).toBe('/sys/fs/bpf');
    expect(a.bpfDir.startsWith('/sys/fs/bpf/')).toBe(true);
    expect(hostPathOf(join(hostRoot, a.preloadDir))).toBe(a.preloadDir);
    // Pods of preload nodes get the library from our image, the one the manifests run.
    expect(config.policy.preloadImage).toBe(c.image);
    // The kernel's module lists: whether the node's kernel has SMC at all.
    expect(hostPathOf(join(hostRoot, '/lib/modules'))).toBe('/lib/modules');
    // The device plugin is its own DaemonSet's: the agent does not serve it (its default, which
    // the DaemonSet leaves alone), nor mount its dir.
    expect(env.ERDMA_SMCR_AGENT_DEVICE_PLUGIN).toBeUndefined();
    expect(a.devicePlugin).toBe(false);
    expect(mounts[join(a.kubeletDir, 'device-plugins')]).toBeUndefined();
    expect(Number(env.ERDMA_SMCR_AGENT_METRICS_PORT)).toBe(c.readinessProbe.httpGet.port);
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(spec).toMatchObject({
      hostNetwork: true,
      hostPID: true,
      serviceAccountName: 'erdma-smcr-agent',
      priorityClassName: 'system-node-critical',
    });
    expect(c.securityContext.capabilities).toEqual({
      drop: ['ALL'],
      add: ['NET_ADMIN', 'SYS_ADMIN', 'SYS_PTRACE'],
    });
    // The agent cannot be scheduled by the labels it writes itself.
    for (const k of Object.keys(spec.nodeSelector))
      expect(Object.values(NODE_LABELS)).not.toContain(k);
  });

  // #77: a `type: Directory` on /lib/modules kept the agent from starting on every node without it.
  // Each hostPath of ours is here with the type it must have and why; a new one fails until it is
  // added, so a host assumption cannot slip in unread.
  it('every hostPath has the type its absence on a node calls for', () => {
    const want: Record<string, string | undefined> = {
      // Made by the kernel on every Linux node.
      '/sys': 'Directory',
      // Required of every OS (os-release(5)); with no type a runtime would make a directory there.
      '/etc/os-release': 'File',
      // Written by the agent or the device plugin: created where absent.
      '/etc/cni/net.d': 'DirectoryOrCreate',
      '/opt/cni/bin': 'DirectoryOrCreate',
      '/var/lib/cni/erdma-smcr': 'DirectoryOrCreate',
      '/var/log/erdma-smcr': 'DirectoryOrCreate',
      '/run/erdma-smcr': 'DirectoryOrCreate',
      '/sys/fs/bpf': 'DirectoryOrCreate',
      '/opt/erdma-smcr/lib': 'DirectoryOrCreate',
      // Must exist before the first pod's namespace for HostToContainer propagation to show it.
      '/run/netns': 'DirectoryOrCreate',
      // The kubelet makes it; without it no device plugin can register, so waiting is right.
      '/var/lib/kubelet/device-plugins': 'Directory',
      // Read only and optional (minimal node images have none): no type check.
      '/lib/modules': undefined,
    };
    const seen = new Set<string>();
    for (const name of ['erdma-smcr-agent', 'erdma-smcr-device-plugin']) {
      const spec = find(base, 'DaemonSet', name).spec.template.spec;
      for (const v of spec.volumes as { hostPath?: { path: string; type?: string } }[]) {
        if (!v.hostPath) continue;
        seen.add(v.hostPath.path);
        expect(Object.keys(want), `${name}: hostPath ${v.hostPath.path} is listed`).toContain(
          v.hostPath.path,
        );
        expect(v.hostPath.type, `${name}: ${v.hostPath.path}`).toBe(want[v.hostPath.path]);
      }
    }
    expect([...seen].sort()).toEqual(Object.keys(want).sort());
  });

  // #80 item 2: once it fails closed the webhook is part of the control plane's availability.
  it('webhook: critical priority everywhere; replicas on different nodes required where it fails closed', () => {
    const spec = (objs: Obj[]): ReturnType<typeof find> =>
      find(objs, 'Deployment', 'erdma-smcr-webhook').spec.template.spec;
    for (const objs of [base, matchConditions, certManager])
      expect(spec(objs).priorityClassName).toBe('system-cluster-critical');
    const term = {
      topologyKey: 'kubernetes.io/hostname',
      labelSelector: {
        matchLabels: {
          'app.kubernetes.io/name': 'erdma-smcr',
          'app.kubernetes.io/component': 'webhook',
        },
      },
    };
    expect(spec(matchConditions).affinity.podAntiAffinity).toEqual({
      requiredDuringSchedulingIgnoredDuringExecution: [term],
    });
    // The base runs on a single-node cluster too (the harness's): preferred there.
    expect(
      spec(base).affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]
        .podAffinityTerm,
    ).toEqual(term);
    expect(
      find(matchConditions, 'MutatingWebhookConfiguration', 'erdma-smcr').webhooks[0].failurePolicy,
    ).toBe('Fail');
  });

  // #80 item 3: docs/install.md says the webhook touches neither its Secret nor the webhook
  // configurations under cert-manager; its rights now say the same.
  it('cert-manager overlay: the webhook may write no Secret and no webhook configuration', () => {
    const rules = (kind: string): { resources: string[]; verbs: string[] }[] =>
      find(certManager, kind, 'erdma-smcr-webhook').rules;
    const written = [...rules('ClusterRole'), ...rules('Role')].filter((r) =>
      r.verbs.some((v) => !['get', 'list', 'watch'].includes(v)),
    );
    expect(written).toEqual([]);
    const read = [...rules('ClusterRole'), ...rules('Role')].flatMap((r) => r.resources);
    expect(read.sort()).toEqual(['configmaps', 'nodes', 'servicecidrs']);
    // The base keeps them: there the webhook bootstraps its Secret and the caBundle itself.
    expect(
      find(base, 'Role', 'erdma-smcr-webhook').rules.map(
        (r: { resources: string[] }) => r.resources[0],
      ),
    ).toContain('secrets');
  });

  it('cert-manager overlay: files mode from the issued Secret, caBundle injected, same names', () => {
    const d = find(certManager, 'Deployment', 'erdma-smcr-webhook');
    const c = d.spec.template.spec.containers[0];
    expect(c.args).toContain('files');
    const certDir = c.args[c.args.indexOf('--cert-dir') + 1];
    const mount = c.volumeMounts.find((m: { mountPath: string }) => m.mountPath === certDir);
    const secret = d.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name)
      .secret.secretName;
    const cert = find(certManager, 'Certificate', 'erdma-smcr-webhook');
    expect(cert.spec.secretName).toBe(secret);
    expect(cert.spec.dnsNames).toContain(
      `${config.webhook.serviceName}.${config.webhook.namespace}.svc`,
    );
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      expect(find(certManager, kind, 'erdma-smcr').metadata).toMatchObject({
        annotations: {
          'cert-manager.io/inject-ca-from': `${config.webhook.namespace}/erdma-smcr-webhook`,
        },
      });
    }
  });
});
