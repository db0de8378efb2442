// Registers our webhook with a test API server the way the manifests do: a Namespace, a Service
// with a fixed loopback ClusterIP (the API server dials it directly: no proxy, no Endpoints), and
// both webhook configurations. Without a CA the caBundle is left for the webhook to set.
export const WEBHOOK_IP = '127.100.0.10';

export function registration(port: number, caPem?: string, failurePolicy: 'Fail' | 'Ignore' = 'Fail'): string {
  const caBundle = caPem === undefined ? {} : { caBundle: Buffer.from(caPem).toString('base64') };
  const clientConfig = (path: string) => ({ service: { name: 'erdma-smcr-webhook', namespace: 'erdma-smcr', path, port }, ...caBundle });
  const common = { admissionReviewVersions: ['v1'], sideEffects: 'None', timeoutSeconds: 10, failurePolicy };
  const docs = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'erdma-smcr' } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'e2e' } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'erdma-smcr-webhook', namespace: 'erdma-smcr' },
      spec: { clusterIP: WEBHOOK_IP, ports: [{ name: 'https', port, targetPort: port }] },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'erdma-smcr' },
      webhooks: [{ name: 'pods.smcr.erdma.io', ...common, reinvocationPolicy: 'IfNeeded', clientConfig: clientConfig('/mutate'),
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods'] }] }],
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'erdma-smcr' },
      webhooks: [{ name: 'workloads.smcr.erdma.io', ...common, clientConfig: clientConfig('/validate'),
        rules: [
          { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['deployments', 'statefulsets', 'daemonsets', 'replicasets'] },
          { apiGroups: ['batch'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['jobs', 'cronjobs'] },
        ] }],
    },
  ];
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs });
}

