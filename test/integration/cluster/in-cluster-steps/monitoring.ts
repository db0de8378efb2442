// Debian's Prometheus scrapes the webhook, agent and device plugin pods: every recording rule and
// dashboard query returns data, and ErdmaSmcrWebhookDown reaches Alertmanager.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { hwCounters } from '../../../harness/k8s/host-tree.js';
import { prometheusAvailable, startPrometheus } from '../../../harness/prometheus.js';
import yaml from 'js-yaml';
import { APP, HOST, type InCluster } from './context.js';

export async function monitoredEndToEnd(c: InCluster): Promise<void> {
  const { dir, cp, node, kubectl, getJson, until, rolledOut } = c;
  expect(prometheusAvailable()).toBe('');
  await rolledOut('deployment', 'erdma-smcr-webhook');
  await rolledOut('daemonset', 'erdma-smcr-agent');
  await rolledOut('daemonset', 'erdma-smcr-device-plugin');
  // Scrape jobs named as the PodMonitors name them (<namespace>/<PodMonitor>), which the
  // rules' job matchers expect; the targets are the pods' addresses and "metrics" ports.
  const pods = (await getJson('pods', '-n', 'erdma-smcr')).items.filter(
    (p) => p.status.phase === 'Running' && !p.metadata.deletionTimestamp,
  );
  const jobs = ['webhook', 'agent', 'device-plugin'].map((component) => ({
    job: `erdma-smcr/erdma-smcr-${component}`,
    targets: pods
      .filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === component)
      .map((p) => {
        const port = (p.spec.containers as { ports?: { name: string; containerPort: number }[] }[])
          .flatMap((c) => c.ports ?? [])
          .find((x) => x.name === 'metrics')!.containerPort;
        return `${p.status.podIP as string}:${port}`;
      }),
  }));
  for (const j of jobs) expect(j.targets.length, j.job).toBeGreaterThan(0);
  const prom = startPrometheus(node, join(dir, 'prometheus'), {
    jobs,
    rulesFile: 'manifests/monitoring/erdma-smcr.rules.yaml',
  });
  try {
    const total = jobs.reduce((n, j) => n + j.targets.length, 0);
    await until('every target scraped', async () => {
      const t = prom.targets();
      return t.length === total && t.every((x) => x.health === 'up') ? true : undefined;
    }).catch((err: Error) => {
      throw new Error(
        `${err.message}\n${JSON.stringify(prom.targets())}\n${node.logs('prometheus').slice(-2000)}`,
      );
    });
    // Reviews while Prometheus watches: allowed and denied ones through the API server, and
    // a request that is not a review, straight to a webhook pod.
    const webhookPod = jobs[0]!.targets[0]!.replace(/:\d+$/, '');
    const pod = (hostNetwork: boolean) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'watched',
          namespace: 'apps',
          annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
        },
        spec: { hostNetwork, containers: [{ name: 'app', image: APP }] },
      });
    const queries = [
      ...(
        yaml.load(readFileSync('manifests/monitoring/erdma-smcr.rules.yaml', 'utf8')) as {
          groups: { rules: { record?: string }[] }[];
        }
      ).groups
        .flatMap((g) => g.rules)
        .filter((r) => r.record)
        .map((r) => ({ panel: `recording rule`, expr: r.record! })),
      ...(
        (await import('../../../../scripts/dashboard.mjs' as string)) as {
          queries: () => { panel: string; expr: string }[];
        }
      )
        .queries()
        .map((q) => ({ ...q, expr: q.expr.replaceAll('$__rate_interval', '1m') })),
    ];
    // Series of SMC sockets: this node's kernel has no smc_diag (the status test above), so
    // there are none here; the VM suite runs SMC-R itself.
    const needsSmc = (expr: string) =>
      /pod_(connections|fallback_connections|smcr_bytes)/.test(expr);
    const empty = (): string[] =>
      queries
        .filter((q) => !needsSmc(q.expr) && prom.query(q.expr).length === 0)
        .map((q) => `${q.panel}: ${q.expr}`);
    let missing: string[] = [];
    let sent = 0;
    const counters = hwCounters(HOST, 'erdma_0');
    await until(
      'every recording rule and dashboard query returns data',
      async () => {
        await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], pod(false));
        await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], pod(true));
        // Traffic through a device, as the driver would count it.
        sent += 1 << 20;
        writeFileSync(join(counters, 'tx_bytes_cnt'), `${sent}\n`);
        writeFileSync(join(counters, 'tx_packets_cnt'), `${sent >> 10}\n`);
        // A few requests that are not reviews (more would fire ErdmaSmcrWebhookBadRequests).
        if (sent <= 3 << 20)
          node.exec('curl', [
            '-sk',
            '-o',
            '/dev/null',
            '-X',
            'POST',
            '-H',
            'content-type: application/json',
            '-d',
            '{"kind":1}',
            `https://${webhookPod}:8443/mutate`,
          ]);
        missing = empty();
        return missing.length === 0 ? true : undefined;
      },
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; still empty:\n${missing.join('\n')}`);
    });
    expect(queries.filter((q) => needsSmc(q.expr)).length).toBeLessThan(queries.length / 2);
    // The device's traffic, per node as eadm stat shows it, is what the driver counted.
    const tx = await until('erdma_0 sending in Prometheus', async () => {
      sent += 1 << 20;
      writeFileSync(join(counters, 'tx_bytes_cnt'), `${sent}\n`);
      const r = prom.query(
        'sum by (device) (rate(erdma_smcr_device_bytes_total{direction="tx"}[1m]))',
      );
      return Number(r.find((x) => x.metric.device === 'erdma_0')?.value[1]) > 0 ? r : undefined;
    });
    expect(tx.find((x) => x.metric.device === 'erdma_2')?.value[1]).toBe('0');
    expect(tx.find((x) => x.metric.device === 'erdma_2')?.value[1]).toBe('0');
    // The device plugin exports its own series, not the agent's gauges (which read 0 there
    // and fired ErdmaSmcrNodeNotCapable and ErdmaSmcrCniNotChained for every such pod).
    const plugin = 'job="erdma-smcr/erdma-smcr-device-plugin"';
    expect(prom.query(`{${plugin}, __name__=~"erdma_smcr_agent_.*"}`)).toEqual([]);
    expect(
      prom.query(`erdma_smcr_device_plugin_registered{${plugin}}`).map((x) => x.value[1]),
    ).toEqual(['1']);
    // A healthy cluster fires none of the alerts about its state (every for: cut to seconds);
    // those about traffic (slow or bad requests, missed pods, fallbacks) depend on this
    // test's load and are not judged here. Then one for real: the webhook pods stopped, the
    // alert reaches Alertmanager, and no other.
    await new Promise((r) => setTimeout(r, 10_000));
    const before = new Set(prom.alertmanagerAlerts().map((a) => a.labels.alertname ?? ''));
    const traffic = /WebhookSlow|WebhookBadRequests|PodsMissed|ConnectionsFallingBack/;
    expect([...before].filter((a) => !traffic.test(a))).toEqual([]);
    const scaleWebhook = (n: number): Promise<string> =>
      kubectl('scale', 'deployment', '-n', 'erdma-smcr', 'erdma-smcr-webhook', `--replicas=${n}`);
    const replicas = (await getJson('deployment', '-n', 'erdma-smcr', 'erdma-smcr-webhook')).spec
      .replicas as number;
    await scaleWebhook(0);
    try {
      const alert = await until('ErdmaSmcrWebhookDown in Alertmanager', async () =>
        prom
          .alertmanagerAlerts()
          .find(
            (a) => a.labels.alertname === 'ErdmaSmcrWebhookDown' && a.status.state === 'active',
          ),
      );
      expect(alert.labels.severity).toBe('critical');
      const now = prom.alertmanagerAlerts().map((a) => a.labels.alertname ?? '');
      expect(now.filter((a) => !before.has(a))).toEqual(['ErdmaSmcrWebhookDown']);
    } finally {
      await scaleWebhook(replicas);
    }
    await rolledOut('deployment', 'erdma-smcr-webhook');
  } finally {
    prom.stop();
  }
}
