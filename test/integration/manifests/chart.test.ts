// The Helm chart (charts/erdma-smcr) and the kustomize manifests say one thing (#87 item 2): each
// shipped kustomization is rendered by kubectl 1.37's kustomize and the chart by helm 4 with the
// values that choose the same install, and the two are compared object by object. Since #94 the
// shipped directories are rendered from the chart (scripts/render-manifests.mjs), so for them this
// holds by construction; what it still checks is kustomize's composition of the rendered parts
// (a component added to an overlay) against the chart's one render. What may
// differ, and only that: the Namespace (helm install --create-namespace makes it), the labels
// Helm adds (app.kubernetes.io/instance, version, managed-by, helm.sh/chart; and the base's
// name and component labels on objects the base leaves unlabelled). The chart's schema is held to
// its values, manifests/ to a render of it now, and its versions to the package's. No cluster: docs/install.md "Helm and kustomize: one source".
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { binPath } from '../../harness/k8s/control-plane.js';
import { k8sBinaries, requires } from '../../helpers/requires.js';
import { CHART, HELM_INSTALL, HELM_UNINSTALL, helmEnv, helmTemplate } from '../../harness/helm.js';
import { loadConfig } from '../../../src/config/load.js';

const why = requires('the chart suite (helm 4, kubectl 1.37)', k8sBinaries(['helm', 'kubectl']));

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
} & Record<string, unknown>;

function helm(args: readonly string[]): Obj[] {
  const r = helmTemplate(args);
  if (r.status !== 0) throw new Error(`helm template ${args.join(' ')}: ${r.stderr}`);
  return (yaml.loadAll(r.stdout) as (Obj | null)[]).filter((o): o is Obj => o !== null);
}

function kustomize(dir: string): Obj[] {
  const r = spawnSync(binPath('kubectl'), ['kustomize', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${r.stderr}`);
  return yaml.loadAll(r.stdout) as Obj[];
}

const HELM_LABELS = [
  'app.kubernetes.io/instance',
  'app.kubernetes.io/version',
  'app.kubernetes.io/managed-by',
  'helm.sh/chart',
];
const BASE_LABELS = ['app.kubernetes.io/name', 'app.kubernetes.io/component'];
const key = (o: Obj): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** The chart's object as kustomize would have it: Helm's labels off, and the base's where the base has none. */
function unhelm(chart: Obj, base: Obj | undefined): Obj {
  const o = structuredClone(chart);
  const labels = { ...o.metadata.labels };
  for (const l of HELM_LABELS) delete labels[l];
  for (const l of BASE_LABELS) if (!(l in (base?.metadata.labels ?? {}))) delete labels[l];
  if (Object.keys(labels).length > 0) o.metadata.labels = labels;
  else delete o.metadata.labels;
  return o;
}

/** The cluster profile compared as data, not as text (the base's carries a comment). */
function profileParsed(o: Obj): Obj {
  if (o.kind !== 'ConfigMap' || o.metadata.name !== 'erdma-smcr-cluster') return o;
  const c = structuredClone(o) as Obj & { data: Record<string, string> };
  c.data = { ...c.data, 'profile.yaml': yaml.load(c.data['profile.yaml']!) as string };
  return c;
}

function compare(kustomizeDir: string, values: readonly string[]): void {
  const base = kustomize(kustomizeDir).filter((o) => o.kind !== 'Namespace');
  const byKey = new Map(base.map((o) => [key(o), o]));
  const chart = helm(values);
  expect(chart.map(key).sort()).toEqual(base.map(key).sort());
  for (const o of chart) {
    const b = byKey.get(key(o))!;
    for (const l of HELM_LABELS)
      expect(o.metadata.labels?.[l], `${key(o)} label ${l}`).toBeDefined();
    expect(profileParsed(unhelm(o, b)), key(o)).toEqual(profileParsed(b));
  }
}

const API_1_37 = ['--kube-version', '1.37.0'];
const API_1_27 = ['--kube-version', '1.27.0'];
const MONITORING = [
  '--api-versions',
  'monitoring.coreos.com/v1/PodMonitor',
  '--api-versions',
  'monitoring.coreos.com/v1/PrometheusRule',
];

describe.skipIf(why !== '')('the chart and the kustomize manifests say one thing', () => {
  // matchConditions auto: off before 1.28, so the defaults there are the base.
  it.each([
    ['manifests/base', 'the defaults (an API server before 1.28)', [...API_1_27]],
    [
      'manifests/base',
      'matchConditions off (any version)',
      [...API_1_37, '--set', 'webhook.matchConditions=false'],
    ],
    [
      'manifests/overlays/match-conditions',
      'failurePolicy Fail (1.37: matchConditions auto-on)',
      [...API_1_37, '--set', 'webhook.failurePolicy=Fail'],
    ],
    [
      'manifests/overlays/cert-manager',
      'certificates from cert-manager',
      [...API_1_27, '--set', 'certificates.source=cert-manager'],
    ],
    [
      'manifests/overlays/dra',
      'devices through DRA (1.37)',
      [...API_1_37, '--set', 'devices.path=dra', '--set', 'webhook.matchConditions=false'],
    ],
    [
      'test/integration/manifests/node-restriction',
      'Fail and the node-restriction policy',
      [...API_1_37, '--set', 'webhook.failurePolicy=Fail', '--set', 'nodeRestriction.enabled=true'],
    ],
    [
      'test/integration/manifests/chart/monitoring',
      "prometheus-operator's CRDs present",
      [...API_1_27, ...MONITORING],
    ],
  ] as const)('%s = the chart with %s', (dir, _what, values) => {
    compare(dir, values);
  });

  it('the negative control: a chart object changed by a value no kustomization has differs', () => {
    expect(() =>
      compare('manifests/base', [...API_1_27, '--set', 'webhook.timeoutSeconds=7']),
    ).toThrow(/^MutatingWebhookConfiguration\/\/erdma-smcr: expected/);
  });

  it('devices.path both: the device plugin everywhere but on nodes labelled for DRA, which run the DRA driver', () => {
    const objs = helm([...API_1_37, '--set', 'devices.path=both']);
    const term = (name: string) =>
      (
        objs.find((o) => o.kind === 'DaemonSet' && o.metadata.name === name) as unknown as {
          spec: {
            template: {
              spec: {
                affinity: {
                  nodeAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: {
                      nodeSelectorTerms: { matchExpressions: unknown[] }[];
                    };
                  };
                };
              };
            };
          };
        }
      ).spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
        .nodeSelectorTerms[0]!.matchExpressions;
    expect(term('erdma-smcr-device-plugin')).toEqual([
      { key: 'smcr.erdma.io/device-path', operator: 'NotIn', values: ['dra'] },
    ]);
    expect(term('erdma-smcr-dra')).toEqual([
      { key: 'smcr.erdma.io/device-path', operator: 'In', values: ['dra'] },
    ]);
    const cls = objs.find((o) => o.kind === 'DeviceClass') as unknown as {
      spec: { extendedResourceName?: string };
    };
    expect(cls.spec.extendedResourceName).toBe('aliyun/erdma');
    // On 1.35 (dra alone is refused there: chart-values.test.ts), both's DeviceClass goes without it.
    const on135 = helm(['--kube-version', '1.35.0', '--set', 'devices.path=both']).find(
      (o) => o.kind === 'DeviceClass',
    ) as unknown as { spec: { extendedResourceName?: string } };
    expect(on135.spec.extendedResourceName).toBeUndefined();
  });

  it('values the agent reads reach the device plugin, as a configuration it loads: allocation all, rdma/hca, slots, take-over, log level', async () => {
    const objs = helm([
      ...API_1_37,
      '--set',
      'devices.allocation=all',
      '--set',
      'devices.slotsPerDevice=8',
      '--set',
      'devices.takeOver=true',
      '--set',
      'logLevel=debug',
      '--set-json',
      'devices.resources=[{"name":"aliyun/erdma","selector":{"drivers":["erdma"]}},{"name":"rdma/hca","selector":{"drivers":["erdma"]},"mode":"shared"}]',
    ]);
    const cm = objs.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === 'erdma-smcr-device-plugin',
    ) as unknown as { data: Record<string, string> };
    expect(yaml.load(cm.data['config.yaml']!)).toEqual({
      agent: {
        allocation: 'all',
        takeOverResources: true,
        resources: [
          { name: 'aliyun/erdma', selector: { drivers: ['erdma'] } },
          { name: 'rdma/hca', selector: { drivers: ['erdma'] }, mode: 'shared' },
        ],
      },
    });
    // What the device plugin loads (src/config/load.ts), as it would in its pod.
    const dir = mkdtempSync(join(tmpdir(), 'chart-config-'));
    writeFileSync(join(dir, 'config.yaml'), cm.data['config.yaml']!);
    const loaded = await loadConfig({ file: join(dir, 'config.yaml'), env: {} });
    expect([
      loaded.agent.allocation,
      loaded.agent.takeOverResources,
      loaded.agent.resources?.map((r) => r.name),
    ]).toEqual(['all', true, ['aliyun/erdma', 'rdma/hca']]);
    rmSync(dir, { recursive: true });
    const ds = objs.find(
      (o) => o.kind === 'DaemonSet' && o.metadata.name === 'erdma-smcr-device-plugin',
    ) as unknown as {
      spec: {
        template: {
          spec: { containers: { args: string[]; env: { name: string; value?: string }[] }[] };
        };
      };
    };
    const c = ds.spec.template.spec.containers[0]!;
    expect(c.args).toEqual(['--config', '/etc/erdma-smcr/config.yaml', 'device-plugin']);
    expect(c.env).toContainEqual({ name: 'ERDMA_SMCR_SLOTS_PER_DEVICE', value: '8' });
    expect(c.env).toContainEqual({ name: 'ERDMA_SMCR_LOG_LEVEL', value: 'debug' });
  });

  it('manifests/ is what scripts/render-manifests.mjs renders from the chart now, byte for byte', () => {
    const r = spawnSync(
      'node',
      ['scripts/render-manifests.mjs', '--check', '--helm', binPath('helm')],
      { encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
  });

  it('the check can fail: after a chart edit it names the files to render again', () => {
    const copy = mkdtempSync(join(tmpdir(), 'render-check-'));
    try {
      for (const d of ['charts', 'manifests', 'scripts'])
        cpSync(d, join(copy, d), { recursive: true });
      const values = join(copy, CHART, 'values.yaml');
      writeFileSync(
        values,
        readFileSync(values, 'utf8').replace('logLevel: info', 'logLevel: debug'),
      );
      const r = spawnSync(
        'node',
        ['scripts/render-manifests.mjs', '--check', '--helm', binPath('helm')],
        { encoding: 'utf8', cwd: copy },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(
        /^stale \(run node scripts\/render-manifests.mjs\): .*manifests\/base\/webhook.yaml/,
      );
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it("its version and appVersion are the package's, and the default image tag the appVersion", () => {
    const chart = yaml.load(readFileSync(`${CHART}/Chart.yaml`, 'utf8')) as {
      version: string;
      appVersion: string;
    };
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(chart.version).toBe(pkg.version);
    expect(chart.appVersion).toBe(pkg.version);
    const images = helm(API_1_27).flatMap((o) =>
      (
        (o.spec as { template?: { spec: { containers: { image: string }[] } } } | undefined)
          ?.template?.spec.containers ?? []
      ).map((c) => c.image),
    );
    expect(new Set(images)).toEqual(new Set([`ghcr.io/erdma-smcr/erdma-smcr:${pkg.version}`]));
  });

  it("the README's Helm install and uninstall are the in-cluster suite's, word for word", () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).toContain(`\nhelm ${HELM_INSTALL.join(' ')}\n`);
    expect(readme).toContain(`helm ${HELM_UNINSTALL.join(' ')} && kubectl delete ns erdma-smcr`);
  });

  it('helm lint --strict passes', () => {
    const r = spawnSync(binPath('helm'), ['lint', '--strict', CHART], {
      encoding: 'utf8',
      env: helmEnv(),
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  // A bad value fails before anything renders, naming the key (#87 item 4; install: chart-install.test.ts).
  it.each([
    [
      ['--set', 'webhook.failurePolicy=Fial'],
      "at '/webhook/failurePolicy': value must be one of '', 'Ignore', 'Fail'",
    ],
    [['--set', 'webhok.timeoutSeconds=3'], "at '': additional properties 'webhok' not allowed"],
    [
      ['--set', 'webhook.timeoutSeconds=31'],
      "at '/webhook/timeoutSeconds': maximum: got 31, want 30",
    ],
    [
      ['--set', 'devices.path=sriov'],
      "at '/devices/path': value must be one of 'device-plugin', 'dra', 'both'",
    ],
    [['--set', 'webhook.replicas=two'], "at '/webhook/replicas': got string, want integer"],
  ] as const)('schema: %j fails with %s', (values, message) => {
    const r = helmTemplate(values);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
  });

  it('every value in values.yaml is in the schema, and the schema has no key values.yaml lacks', () => {
    const schema = JSON.parse(readFileSync(`${CHART}/values.schema.json`, 'utf8')) as Schema;
    const values = yaml.load(readFileSync(`${CHART}/values.yaml`, 'utf8')) as Record<
      string,
      unknown
    >;
    // ACK's names (agent.preferDriver, ...) are in the schema only: unset is "not given".
    expect(keysOf(values)).toEqual(
      schemaKeys(schema, schema).filter((k) => k !== 'global' && !ACK_NAMES.includes(k)),
    );
  });
});

/** ACK's eRDMA controller's value names the chart takes (docs/install.md), or refuses naming ours. */
const ACK_NAMES = [
  'agent.allocateAllDevices',
  'agent.preferDriver',
  'allocateAllDevices',
  'preferDriver',
  'webhookFailurePolicy',
  'webhookTimeoutSeconds',
  // ACK's keys with no place here, in the schema so that the templates can refuse them naming ours.
  'affinity',
  'agent.fullnameOverride',
  'agent.image',
  'agent.imagePullSecrets',
  'agent.nameOverride',
  'config',
  'controller',
  'credentials',
  'fullnameOverride',
  'nameOverride',
  'podAnnotations',
  'resources',
  'serviceAccount',
];

/** Values whose keys are the user's (or commented out in values.yaml): not walked. */
const OPEN = ['resources', 'issuerRef', 'nodeSelector', 'clusterProfile'];
type Schema = {
  properties?: Record<string, Schema>;
  $ref?: string;
  $defs?: Record<string, Schema>;
};
function schemaKeys(s: Schema, root: Schema, prefix = ''): string[] {
  const resolved = s.$ref ? root.$defs![s.$ref.replace('#/$defs/', '')]! : s;
  if (!resolved.properties || OPEN.includes(prefix.slice(0, -1).split('.').pop()!)) return [];
  return Object.entries(resolved.properties)
    .flatMap(([k, v]) => [`${prefix}${k}`, ...schemaKeys(v, root, `${prefix}${k}.`)])
    .sort();
}
function keysOf(v: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(v)
    .flatMap(([k, x]) => [
      `${prefix}${k}`,
      ...(x && typeof x === 'object' && !Array.isArray(x) && !OPEN.includes(k)
        ? keysOf(x as Record<string, unknown>, `${prefix}${k}.`)
        : []),
    ])
    .sort();
}
