// The pod the API-server suites send (namespace e2e, no token, an image never pulled): one shape
// for the webhook suite and the match-conditions suite.
export function e2ePod(
  name: string,
  annotations: Record<string, string>,
  spec: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'e2e', annotations },
    spec: {
      automountServiceAccountToken: false,
      containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
      ...spec,
    },
  });
}
