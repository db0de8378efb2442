// The alerts and recording rules (manifests/monitoring/erdma-smcr.rules.yaml): checked and unit
// tested with Debian's promtool (test/monitoring/rules.test.yaml: every alert fires on the series
// that should fire it and stays quiet otherwise), the PrometheusRule and PodMonitors of the
// monitoring component validated against prometheus-operator's schemas, and every alert, metric
// and runbook link held to the code and docs/alerts.md; the dashboard as its script builds it,
// each query accepted by promtool and naming only our metrics or recording rules.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { requires } from '../../helpers/requires.js';

const RULES = 'manifests/monitoring/erdma-smcr.rules.yaml';
const COMPONENT = 'manifests/components/monitoring';
const promtool = (): string =>
  spawnSync('promtool', ['--version']).status === 0 ? '' : 'promtool (Debian: prometheus)';
const why = requires('the monitoring suite', promtool);

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  annotations?: Record<string, string>;
}
type Obj = { apiVersion: string; kind: string; metadata: { name: string }; spec: unknown };

const groups = (yaml.load(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups;
const rules = groups.flatMap((g) => g.rules);
const alerts = [...new Set(rules.filter((r) => r.alert).map((r) => r.alert!))];

describe.skipIf(why !== '')('alerts and recording rules', () => {
  it('pass promtool check rules', () => {
    const r = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  it("pass promtool's unit tests, and those test every alert firing and quiet", () => {
    const r = spawnSync('promtool', ['test', 'rules', 'rules.test.yaml'], {
      cwd: 'test/monitoring',
      encoding: 'utf8',
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const tests = yaml.load(readFileSync('test/monitoring/rules.test.yaml', 'utf8')) as {
      tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const a of alerts) {
      const mine = cases.filter((c) => c.alertname === a);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${a} is tested firing`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${a} is tested quiet`,
      ).toBe(true);
    }
  });

  it('promtool notices a broken expectation (the unit tests can fail)', () => {
    const broken = readFileSync('test/monitoring/rules.test.yaml', 'utf8').replace(
      'summary: Node n2 cannot run SMC-R pods.',
      'summary: Node n3 cannot run SMC-R pods.',
    );
    const r = spawnSync('promtool', ['test', 'rules', '/dev/stdin'], {
      cwd: 'test/monitoring',
      input: broken,
      encoding: 'utf8',
    });
    expect(r.status).not.toBe(0);
  });
});

describe('the monitoring component and the docs', () => {
  const objects = readdirSync(COMPONENT)
    .filter((f) => f !== 'kustomization.yaml')
    .flatMap((f) => yaml.loadAll(readFileSync(join(COMPONENT, f), 'utf8')) as Obj[]);

  it('lists every file it ships', () => {
    const k = yaml.load(readFileSync(join(COMPONENT, 'kustomization.yaml'), 'utf8')) as {
      kind: string;
      resources: string[];
    };
    expect(k.kind).toBe('Component');
    expect(k.resources.sort()).toEqual(
      readdirSync(COMPONENT)
        .filter((f) => f !== 'kustomization.yaml')
        .sort(),
    );
  });

  it("every object passes prometheus-operator's schema, and a broken one does not", async () => {
    const models =
      (await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1')) as unknown as Record<
        string,
        new (d: unknown) => { validate(): void }
      >;
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'PodMonitor',
      'PodMonitor',
      'PodMonitor',
      'PrometheusRule',
    ]);
    for (const o of objects) {
      const Model = models[o.kind]!;
      expect(() => new Model(o).validate(), `${o.kind}/${o.metadata.name}`).not.toThrow();
    }
    const broken = structuredClone(objects.find((o) => o.kind === 'PodMonitor')!) as Obj & {
      spec: { podMetricsEndpoints: unknown };
    };
    broken.spec.podMetricsEndpoints = 'metrics';
    expect(() => new models.PodMonitor!(broken).validate()).toThrow();
  });

  it('the PrometheusRule holds exactly the plain rules file (both rendered from the chart: scripts/render-manifests.mjs)', () => {
    const rule = objects.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.spec).toEqual(yaml.load(readFileSync(RULES, 'utf8')));
  });

  it('each PodMonitor selects pods of manifests/base that have a "metrics" port, and the rules match its job', () => {
    const base = readdirSync('manifests/base')
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
      .flatMap((f) => yaml.loadAll(readFileSync(join('manifests/base', f), 'utf8')) as Obj[]);
    for (const pm of objects.filter((o) => o.kind === 'PodMonitor')) {
      const sel = (pm.spec as { selector: { matchLabels: Record<string, string> } }).selector
        .matchLabels;
      const workload = base.find((o) => {
        const labels = (o.spec as { template?: { metadata?: { labels?: Record<string, string> } } })
          ?.template?.metadata?.labels;
        return labels && Object.entries(sel).every(([k, v]) => labels[k] === v);
      }) as
        | (Obj & { spec: { template: { spec: { containers: { ports?: { name: string }[] }[] } } } })
        | undefined;
      expect(workload, pm.metadata.name).toBeDefined();
      expect(
        workload!.spec.template.spec.containers[0]!.ports?.map((p) => p.name),
        pm.metadata.name,
      ).toContain('metrics');
      const job = `erdma-smcr/${pm.metadata.name}`;
      expect(
        rules.some(
          (r) =>
            /job=~"\.\*([a-z-]+)"/.exec(r.expr) &&
            job.endsWith(/job=~"\.\*([a-z-]+)"/.exec(r.expr)![1]!),
        ),
        `a rule matches ${job}`,
      ).toBe(true);
    }
  });

  it("every metric the rules use is exported by our code, or is the API server's or Prometheus's own", () => {
    const src = ['src/admission/metrics.ts', 'src/agent/metrics.ts']
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const ours = new Set([...src.matchAll(/name: '(erdma_smcr_[a-z_]+)'/g)].map((m) => m[1]));
    const recorded = new Set(rules.filter((r) => r.record).map((r) => r.record!));
    for (const r of rules)
      for (const [name] of r.expr.matchAll(/\b[a-z_:]+(?=[{[(\s]|$)/g)) {
        if (!name.startsWith('erdma_smcr')) continue;
        const base = name.replace(/_(bucket|sum|count)$/, '');
        expect(ours.has(base) || recorded.has(name), `${name} in ${r.alert ?? r.record}`).toBe(
          true,
        );
      }
  });

  it('every alert links its section of docs/alerts.md, which says what it means and what to do', () => {
    const doc = readFileSync('docs/alerts.md', 'utf8');
    for (const a of alerts) {
      expect(doc, a).toMatch(new RegExp(`^## ${a}$`, 'm'));
      const section = doc.split(`## ${a}\n`)[1]!.split('\n## ')[0]!;
      expect(section, a).toMatch(/\*\*Means\*\*/);
      expect(section, a).toMatch(/\*\*Look at\*\*/);
      expect(section, a).toMatch(/\*\*Do\*\*/);
      for (const r of rules.filter((x) => x.alert === a))
        expect(r.annotations?.runbook_url).toMatch(
          new RegExp(`docs/alerts\\.md#${a.toLowerCase()}$`),
        );
    }
  });
});

describe.skipIf(why !== '')('the dashboard (manifests/monitoring/dashboard.json)', () => {
  const DASHBOARD = 'manifests/monitoring/dashboard.json';
  let queries: { panel: string; expr: string }[];
  let render: () => string;

  beforeAll(async () => {
    // @ts-expect-error -- a plain .mjs script, typed by its use here
    const mod = (await import('../../../scripts/dashboard.mjs')) as {
      render: () => string;
      queries: () => { panel: string; expr: string }[];
    };
    render = mod.render;
    queries = mod.queries();
  });

  it('is what scripts/dashboard.mjs builds with the Grafana foundation SDK', () => {
    expect(readFileSync(DASHBOARD, 'utf8')).toBe(render());
    const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
      uid: string;
      panels: { type: string; title: string }[];
    };
    expect(d.uid).toBe('erdma-smcr');
    // What the issue asks to see: connections and bytes per pod, fallbacks by reason, device
    // traffic per node, webhook outcomes and latency, certificate expiry.
    for (const metric of [
      'pod_connections',
      'pod_smcr_bytes',
      'pod_fallback_connections',
      'device_bytes_total',
      'admission_requests',
      'admission_duration_seconds',
      'certificate_expiry_timestamp_seconds',
    ])
      expect(
        queries.some((q) => q.expr.includes(metric)),
        metric,
      ).toBe(true);
  });

  it('every query is PromQL promtool accepts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-'));
    try {
      const file = join(dir, 'queries.yaml');
      const asRules = {
        groups: [
          {
            name: 'dashboard',
            rules: queries.map((q, i) => ({
              record: `dashboard:query_${i}`,
              // Grafana's own variable, given a value as Grafana would.
              expr: q.expr.replaceAll('$__rate_interval', '5m'),
            })),
          },
        ],
      };
      writeFileSync(file, yaml.dump(asRules));
      const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain(`SUCCESS: ${queries.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every metric a query names is exported by our code or recorded by our rules', () => {
    const src = ['src/admission/metrics.ts', 'src/agent/metrics.ts']
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const ours = new Set([...src.matchAll(/'(erdma_smcr_[a-z_]+)'/g)].map((m) => m[1]));
    const recorded = new Set(rules.filter((r) => r.record).map((r) => r.record!));
    for (const q of queries)
      for (const [name] of q.expr.matchAll(/\berdma_smcr[a-z0-9_:]+/g)) {
        const base = name.replace(/_(bucket|sum|count)$/, '');
        expect(ours.has(base) || recorded.has(name), `${name} in "${q.panel}"`).toBe(true);
      }
  });
});
