// Debian's Prometheus and Alertmanager (packages prometheus, prometheus-alertmanager), run inside a
// test node's namespaces so they reach the pods there, scraping given targets with our rules file.
// The rules are ours as shipped, but for each `for:`, cut to a few seconds so that an alert fires
// within the test (promtool's unit tests in test/monitoring hold the real durations).
import { type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';

export const PROMETHEUS = '/usr/bin/prometheus';
export const ALERTMANAGER = '/usr/bin/prometheus-alertmanager';

/** '' when both binaries are installed, else what to install. */
export const prometheusAvailable = (): string =>
  existsSync(PROMETHEUS) && existsSync(ALERTMANAGER)
    ? ''
    : "Debian's prometheus and prometheus-alertmanager packages";

/** Where the programs run: a node of the harness (test/harness/k8s/node.ts). */
export interface InNode {
  spawnInNode(cmd: string, args: readonly string[], logName: string): ChildProcess;
  exec(cmd: string, args: readonly string[]): string;
}

export interface ScrapeJob {
  readonly job: string;
  readonly targets: readonly string[];
}

/** One sample of an instant query: its labels and value. */
export interface Sample {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

export interface Prometheus {
  /** An instant query's samples (throws on a query error). */
  query(expr: string): Sample[];
  /** The alerts Alertmanager holds, by name and state. */
  alertmanagerAlerts(): { labels: Record<string, string>; status: { state: string } }[];
  /** Each target's job and health. */
  targets(): { job: string; health: string; lastError: string }[];
  stop(): void;
}

const PROM_PORT = 19090;
const AM_PORT = 19093;

/** The rules file with every `for:` cut to `forSeconds`. */
function quickRules(rulesFile: string, forSeconds: number): string {
  const doc = yaml.load(readFileSync(rulesFile, 'utf8')) as {
    groups: { rules: Record<string, unknown>[] }[];
  };
  for (const g of doc.groups)
    for (const r of g.rules) if (r.for !== undefined) r.for = `${forSeconds}s`;
  return yaml.dump(doc, { lineWidth: -1 });
}

export function startPrometheus(
  node: InNode,
  dir: string,
  opts: { jobs: readonly ScrapeJob[]; rulesFile: string; forSeconds?: number },
): Prometheus {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'rules.yaml'), quickRules(opts.rulesFile, opts.forSeconds ?? 4));
  const config = {
    global: { scrape_interval: '2s', evaluation_interval: '2s' },
    rule_files: [join(dir, 'rules.yaml')],
    alerting: { alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${AM_PORT}`] }] }] },
    scrape_configs: opts.jobs.map((j) => ({
      job_name: j.job,
      static_configs: [{ targets: j.targets }],
    })),
  };
  writeFileSync(join(dir, 'prometheus.yml'), yaml.dump(config));
  // Alertmanager's one receiver takes no action: the test reads the alerts from its API.
  writeFileSync(
    join(dir, 'alertmanager.yml'),
    yaml.dump({ route: { receiver: 'admins', group_wait: '1s' }, receivers: [{ name: 'admins' }] }),
  );
  const children = [
    node.spawnInNode(
      ALERTMANAGER,
      [
        `--config.file=${join(dir, 'alertmanager.yml')}`,
        `--storage.path=${join(dir, 'am')}`,
        `--web.listen-address=127.0.0.1:${AM_PORT}`,
        '--cluster.listen-address=',
      ],
      'alertmanager',
    ),
    node.spawnInNode(
      PROMETHEUS,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${PROM_PORT}`,
      ],
      'prometheus',
    ),
  ];
  const get = (url: string, params: Record<string, string> = {}): unknown => {
    const args = ['-sS', '--fail-with-body', '-G', url];
    for (const [k, v] of Object.entries(params)) args.push('--data-urlencode', `${k}=${v}`);
    return JSON.parse(node.exec('curl', args));
  };
  const api = `http://127.0.0.1:${PROM_PORT}/api/v1`;
  return {
    query(expr) {
      const r = get(`${api}/query`, { query: expr }) as {
        status: string;
        data: { result: Sample[] };
      };
      if (r.status !== 'success') throw new Error(`query ${expr}: ${JSON.stringify(r)}`);
      return r.data.result;
    },
    alertmanagerAlerts: () =>
      get(`http://127.0.0.1:${AM_PORT}/api/v2/alerts`) as {
        labels: Record<string, string>;
        status: { state: string };
      }[],
    targets: () =>
      (
        get(`${api}/targets`) as {
          data: {
            activeTargets: { labels: { job: string }; health: string; lastError: string }[];
          };
        }
      ).data.activeTargets.map((t) => ({
        job: t.labels.job,
        health: t.health,
        lastError: t.lastError,
      })),
    stop() {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    },
  };
}
