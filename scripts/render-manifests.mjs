// Writes the kustomize manifests from the Helm chart, their one source (#94 item 4): each
// directory of manifests/ is `helm template` of charts/erdma-smcr with the values that choose its
// install, Helm's own labels left out (kustomize manages these objects, not Helm). The
// kustomization.yaml files beside them are kustomize's glue and stay hand-written.
//
// Each file written starts with a header that names its source and two digests: of the chart's
// files with the target's arguments, and of the file's own body. The unit tier recomputes both
// without helm (test/unit/manifests/generated.test.ts): a chart changed without running this, or
// a generated file edited by hand, fails there. The integration tier renders again with helm and
// compares byte for byte (--check).
//
// Usage: node scripts/render-manifests.mjs [--check] [--helm PATH]
//   helm: --helm, else $HELM, else the test harness's (/var/cache/erdma-smcr/helm/bin/helm, built
//   by test/harness/k8s/build.sh helm), else `helm` on PATH.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CHART = 'charts/erdma-smcr';
/** Bumped when this script's output changes for the same chart: every header goes stale. */
const FORMAT = 1;
const NAMESPACE = 'erdma-smcr';
const RELEASE = 'erdma-smcr';
const API_1_27 = ['--kube-version', '1.27.0'];
const API_1_37 = ['--kube-version', '1.37.0'];
const NS = ['--set', 'namespace.create=true'];
const MONITORING = [
  '--api-versions',
  'monitoring.coreos.com/v1/PodMonitor',
  '--api-versions',
  'monitoring.coreos.com/v1/PrometheusRule',
];
/** Labels Helm's templates add that name a Helm release: not on objects kustomize applies. */
const HELM_LABELS = [
  'app.kubernetes.io/instance',
  'app.kubernetes.io/version',
  'app.kubernetes.io/managed-by',
  'helm.sh/chart',
];

/**
 * What is written, from what: `args` to `helm template`; `files` maps a file of `dir` to the chart
 * templates whose objects it holds (every template when absent: one file of the whole render).
 * `copy` writes a file of the chart as it is.
 */
export const TARGETS = [
  {
    dir: 'manifests/base',
    what: 'the defaults on API servers before 1.28 (no matchConditions; the webhook keeps its certificates)',
    args: [...API_1_27, ...NS],
    files: {
      'namespace.yaml': ['namespace.yaml'],
      'webhook-rbac.yaml': ['webhook-rbac.yaml'],
      'webhook.yaml': ['webhook.yaml'],
      'webhook-configurations.yaml': ['webhook-configurations.yaml'],
      'agent.yaml': ['agent.yaml'],
      'device-plugin.yaml': ['device-plugin.yaml'],
    },
  },
  {
    dir: 'manifests/overlays/match-conditions',
    what: 'matchConditions (1.28 and later) and the pod webhook failing closed',
    args: [...API_1_37, ...NS, '--set', 'webhook.failurePolicy=Fail'],
    files: { 'erdma-smcr.yaml': null },
  },
  {
    dir: 'manifests/overlays/cert-manager',
    what: "the webhook's certificates from cert-manager",
    args: [...API_1_27, ...NS, '--set', 'certificates.source=cert-manager'],
    files: { 'erdma-smcr.yaml': null },
  },
  {
    dir: 'manifests/overlays/dra',
    what: 'devices through DRA, no device plugin (1.37 and later)',
    args: [
      ...API_1_37,
      ...NS,
      '--set',
      'devices.path=dra',
      '--set',
      'webhook.matchConditions=false',
    ],
    files: { 'erdma-smcr.yaml': null },
  },
  {
    dir: 'manifests/components/dra',
    what: 'the DRA driver and its DeviceClass, to add to an install',
    args: [...API_1_37, '--set', 'devices.path=dra'],
    files: { 'dra.yaml': ['dra.yaml'] },
  },
  {
    dir: 'manifests/components/node-restriction',
    what: 'the node-restriction policies, to add to an install',
    args: [...API_1_37, '--set', 'nodeRestriction.enabled=true'],
    files: { 'policy.yaml': ['node-restriction.yaml'] },
  },
  {
    dir: 'manifests/components/monitoring',
    what: "PodMonitors and the PrometheusRule, where prometheus-operator's CRDs are",
    args: [...API_1_27, ...MONITORING],
    files: { 'monitoring.yaml': ['monitoring.yaml'] },
  },
  {
    dir: 'manifests/monitoring',
    what: 'the plain Prometheus rules file',
    copy: { 'erdma-smcr.rules.yaml': 'files/erdma-smcr.rules.yaml' },
  },
];

const sha256 = (text) => createHash('sha256').update(text).digest('hex');

function chartFiles(dir = CHART) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? chartFiles(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

/** The digest a target's files carry: the chart's every file, the target's arguments, the format. */
export function chartDigest(target, chart = CHART) {
  const h = createHash('sha256');
  for (const f of chartFiles(chart)) h.update(`${relative(chart, f)}\0${readFileSync(f)}\0`);
  h.update(JSON.stringify({ FORMAT, args: target.args ?? [], copy: target.copy ?? null }));
  return h.digest('hex');
}

/** A generated file's header, for its target and body. */
export function header(target, body) {
  const how = target.copy
    ? `a copy of ${CHART}/${Object.values(target.copy)[0]}`
    : `helm template ${RELEASE} ${CHART} --namespace ${NAMESPACE} ${target.args.join(' ')}`;
  return [
    `# Generated by scripts/render-manifests.mjs from ${CHART}: ${target.what}.`,
    `#   ${how}`,
    '# Edit the chart, then run the script; a unit test fails while this file and the chart differ.',
    `# chart sha256: ${chartDigest(target)}`,
    `# body sha256: ${sha256(body)}`,
    '',
  ].join('\n');
}

/** The header's two digests, or undefined when the file has none. */
export function readHeader(text) {
  const chart = /^# chart sha256: ([0-9a-f]{64})$/m.exec(text)?.[1];
  const body = /^# body sha256: ([0-9a-f]{64})$/m.exec(text)?.[1];
  if (!chart || !body) return undefined;
  return { chart, body, rest: text.slice(text.indexOf('\n', text.indexOf('# body sha256:')) + 1) };
}

export { sha256 };

function helmBinary(argv) {
  const i = argv.indexOf('--helm');
  if (i >= 0 && argv[i + 1]) return argv[i + 1];
  if (process.env.HELM) return process.env.HELM;
  const cached = '/var/cache/erdma-smcr/helm/bin/helm';
  return existsSync(cached) ? cached : 'helm';
}

/** The render's objects as [template, text] in helm's order, Helm's labels and Source lines out. */
function render(helm, args) {
  const r = spawnSync(helm, ['template', RELEASE, CHART, '--namespace', NAMESPACE, ...args], {
    encoding: 'utf8',
    env: { ...process.env, HELM_CONFIG_HOME: '/nonexistent-helm-config' },
  });
  if (r.error) throw new Error(`cannot run ${helm}: ${r.error.message} (give --helm PATH)`);
  if (r.status !== 0) throw new Error(`helm template ${args.join(' ')}: ${r.stderr}`);
  const labels = new RegExp(
    `^\\s+(${HELM_LABELS.map((l) => l.replace(/[./]/g, '\\$&')).join('|')}):`,
  );
  return r.stdout
    .split(/^---\s*$/m)
    .map((doc) => {
      const source = /^# Source: [^/]+\/templates\/(\S+)$/m.exec(doc)?.[1];
      const text = doc
        .split('\n')
        .filter((l) => !l.startsWith('# Source: ') && !labels.test(l))
        .join('\n')
        .replace(/^\s*\n/, '')
        .replace(/\s+$/, '');
      return [source, text];
    })
    .filter(([source, text]) => source && /^(apiVersion|kind):/m.test(text));
}

/** Every file of every target, as path → text. */
export function renderAll(helm) {
  const out = new Map();
  for (const t of TARGETS) {
    if (t.copy) {
      for (const [file, from] of Object.entries(t.copy)) {
        const body = readFileSync(join(CHART, from), 'utf8');
        out.set(join(t.dir, file), header(t, body) + body);
      }
      continue;
    }
    const docs = render(helm, t.args);
    for (const [file, templates] of Object.entries(t.files)) {
      const mine = docs.filter(([source]) => !templates || templates.includes(source));
      if (mine.length === 0)
        throw new Error(`${t.dir}/${file}: the render has no object of ${templates}`);
      const body = `${mine.map(([, text]) => text).join('\n---\n')}\n`;
      out.set(join(t.dir, file), header(t, body) + body);
    }
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const files = renderAll(helmBinary(process.argv));
  const stale = [];
  for (const [path, text] of files) {
    const now = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    if (now === text) continue;
    if (check) stale.push(path);
    else writeFileSync(path, text);
  }
  // Files a previous layout wrote that no target writes now.
  for (const t of TARGETS)
    for (const f of existsSync(t.dir) ? readdirSync(t.dir) : []) {
      const path = join(t.dir, f);
      if (
        files.has(path) ||
        !readFileSync(path, 'utf8').includes('# Generated by scripts/render-manifests.mjs')
      )
        continue;
      if (check) stale.push(`${path} (no longer written)`);
      else rmSync(path);
    }
  if (stale.length > 0) {
    console.error(`stale (run node scripts/render-manifests.mjs): ${stale.join(', ')}`);
    process.exit(1);
  }
  if (!check) console.log(`wrote ${files.size} files`);
}
