// Writes manifests/monitoring/dashboard.json, the Grafana dashboard, built with Grafana's own
// foundation SDK (its typed builders give the JSON Grafana 11 imports). Every query is over our
// metrics or the recording rules of manifests/monitoring/erdma-smcr.rules.yaml; the monitoring
// test holds the file equal to this script's output, checks each query with promtool, and that
// each names only metrics the code exports. Usage: node scripts/dashboard.mjs [--print]
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  DashboardBuilder,
  DatasourceVariableBuilder,
  RowBuilder,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as Stat } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as TimeSeries } from '@grafana/grafana-foundation-sdk/timeseries';

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

const query = (expr, legend) => new DataqueryBuilder().expr(expr).legendFormat(legend ?? '__auto');

/** A time series panel: title, help, unit, then [expr, legend] pairs. */
function series(title, description, unit, ...targets) {
  const p = new TimeSeries()
    .title(title)
    .description(description)
    .unit(unit)
    .datasource(DATASOURCE)
    .height(8)
    .span(12);
  for (const [expr, legend] of targets) p.withTarget(query(expr, legend));
  return p;
}

function stat(title, description, unit, expr) {
  return new Stat()
    .title(title)
    .description(description)
    .unit(unit)
    .datasource(DATASOURCE)
    .height(4)
    .span(6)
    .withTarget(query(expr));
}

export function dashboard() {
  return new DashboardBuilder('erdma-smcr: SMC-R over eRDMA')
    .uid('erdma-smcr')
    .tags(['erdma-smcr', 'smc-r', 'rdma'])
    .description(
      'SMC-R pods and their connections, fallbacks to TCP, eRDMA device traffic, the admission webhook and its certificates (docs/alerts.md says what each alert means).',
    )
    .refresh('30s')
    .time({ from: 'now-1h', to: 'now' })
    .timezone('browser')
    .withVariable(
      new DatasourceVariableBuilder('datasource').label('Prometheus').type('prometheus'),
    )
    .withRow(new RowBuilder('Overview'))
    .withPanel(
      stat(
        'Capable nodes',
        'Nodes whose agent finds SMC-R can run (label smcr.erdma.io/capable=true).',
        'none',
        'erdma_smcr:nodes_capable:sum',
      ),
    )
    .withPanel(
      stat(
        'Accelerated connections',
        'Established connections of SMC-R pods on an accelerated path: over RDMA (mode SMCR) between nodes, or through shared memory (mode SMCD, loopback-ism) within one node, at the agents’ last sample.',
        'none',
        'sum(erdma_smcr:pod_connections:sum_by_namespace_mode{mode=~"SMCR|SMCD"})',
      ),
    )
    .withPanel(
      stat(
        'Connections fallen back to TCP',
        'Connections of SMC-R pods that fell back to TCP (by reason below).',
        'none',
        'sum(erdma_smcr:pod_fallback_connections:sum_by_reason)',
      ),
    )
    .withPanel(
      stat(
        'Webhook certificate expires in',
        'Time left on the serving certificate the webhook uses (the earliest of its replicas).',
        's',
        'min(erdma_smcr_certificate_expiry_timestamp_seconds) - time()',
      ),
    )
    .withRow(new RowBuilder('SMC-R pods'))
    .withPanel(
      series(
        'Connections by namespace and mode',
        'SMCR: over RDMA; SMCD: through shared memory within the node (loopback-ism); TCP: fell back. From smc_diag at each agent sample (agent.smcSampleMs).',
        'none',
        ['erdma_smcr:pod_connections:sum_by_namespace_mode', '{{namespace}} {{mode}}'],
      ),
    )
    .withPanel(
      series(
        'Fallbacks to TCP by reason',
        'Decoded SMC_CLC_DECL_ reasons; docs/troubleshooting.md says what each one means.',
        'none',
        ['erdma_smcr:pod_fallback_connections:sum_by_reason', '{{reason}}'],
      ),
    )
    .withPanel(
      series(
        'SMC-R bytes of open connections, by pod',
        'Bytes moved by each pod’s open SMC-R connections (buffer cursors), at the last sample.',
        'bytes',
        ['sum by (namespace, pod) (erdma_smcr_pod_smcr_bytes)', '{{namespace}}/{{pod}}'],
      ),
    )
    .withPanel(
      series(
        'SMC-R pods by outcome',
        'Pods asking for SMC-R on each node, by what the plugin did (applied, missed, ...).',
        'none',
        ['sum by (outcome) (erdma_smcr_agent_pods)', '{{outcome}}'],
      ),
    )
    .withRow(new RowBuilder('eRDMA devices (like eadm stat)'))
    .withPanel(
      series(
        'Device traffic per node',
        'Bytes per second through each RDMA device port, from the driver’s hardware counters.',
        'Bps',
        [
          'sum by (instance, device, direction) (rate(erdma_smcr_device_bytes_total[$__rate_interval]))',
          '{{instance}} {{device}} {{direction}}',
        ],
      ),
    )
    .withPanel(
      series(
        'Device packets and drops per node',
        'Packets per second, and dropped packets per second, through each RDMA device port.',
        'pps',
        [
          'sum by (instance, device) (rate(erdma_smcr_device_packets_total[$__rate_interval]))',
          '{{instance}} {{device}} packets',
        ],
        [
          'sum by (instance, device) (rate(erdma_smcr_device_drops_total[$__rate_interval]))',
          '{{instance}} {{device}} drops',
        ],
      ),
    )
    .withRow(new RowBuilder('Admission webhook'))
    .withPanel(
      series(
        'Reviews by endpoint and verdict',
        'Admission reviews per second (the API server sends every pod: failurePolicy Ignore).',
        'reqps',
        ['erdma_smcr:admission_requests:rate5m', '{{endpoint}} {{verdict}}'],
      ),
    )
    .withPanel(
      series(
        'Review latency, p99',
        'The API server gives a webhook call at most its timeoutSeconds (10 s in the manifests).',
        's',
        ['erdma_smcr:admission_duration_seconds:p99_5m', 'p99'],
      ),
    )
    .withPanel(
      series(
        'Denials by rule',
        'Pods refused per second, by the rule that refused them (docs/policy.md).',
        'reqps',
        ['sum by (rule) (rate(erdma_smcr_admission_denials_total[$__rate_interval]))', '{{rule}}'],
      ),
    )
    .withPanel(
      series(
        'Requests that were not reviews',
        'Bodies refused before a decision (bad JSON, too large, wrong version), per second by code.',
        'reqps',
        [
          'sum by (code) (rate(erdma_smcr_admission_bad_requests_total[$__rate_interval]))',
          '{{code}}',
        ],
      ),
    )
    .build();
}

/** Every PromQL expression of the dashboard, with its panel's title. */
export function queries(d = dashboard()) {
  return d.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
}

export const render = () => `${JSON.stringify(dashboard(), null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--print')) process.stdout.write(render());
  else writeFileSync('manifests/monitoring/dashboard.json', render());
}
