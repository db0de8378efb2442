// Registers our webhook with a test API server the way the manifests do: a Namespace, a Service
// with a fixed loopback ClusterIP (the API server dials it directly: no proxy, no Endpoints), and
// both webhook configurations, whose rules (kinds, operations), reinvocation policy and namespace
// selector are read from manifests/base, so the tests send the API server's calls that ship.
// Without a CA the caBundle is left for the webhook to set.
import { readFileSync } from 'node:fs';
import jsyaml from 'js-yaml';

export const WEBHOOK_IP = '127.100.0.10';

type Hook = Record<string, unknown>;
type Configuration = { kind: string; metadata: { name: string }; webhooks: Hook[] };

/** The shipped webhook configurations (manifests/base/webhook-configurations.yaml). */
export function shippedConfigurations(): Configuration[] {
  return jsyaml.loadAll(
    readFileSync('manifests/base/webhook-configurations.yaml', 'utf8'),
  ) as Configuration[];
}

export function registration(
  port: number,
  caPem?: string,
  failurePolicy: 'Fail' | 'Ignore' = 'Fail',
): string {
  const caBundle = caPem === undefined ? {} : { caBundle: Buffer.from(caPem).toString('base64') };
  const configurations = shippedConfigurations().map((c) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: c.kind,
    metadata: { name: c.metadata.name },
    webhooks: c.webhooks.map((hook) => {
      const service = (hook.clientConfig as { service: Record<string, unknown> }).service;
      // A slow machine may take longer than the shipped 5 s; the tests judge answers, not speed.
      return {
        ...hook,
        timeoutSeconds: 10,
        failurePolicy,
        clientConfig: { service: { ...service, port }, ...caBundle },
      };
    }),
  }));
  const docs = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'erdma-smcr' } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'e2e' } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'erdma-smcr-webhook', namespace: 'erdma-smcr' },
      spec: { clusterIP: WEBHOOK_IP, ports: [{ name: 'https', port, targetPort: port }] },
    },
    ...configurations,
  ];
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs });
}
