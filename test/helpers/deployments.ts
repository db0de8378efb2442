// The annotated Deployment the cluster suites apply: `replicas` pods asking for SMC-R, no service
// account token, the rest of the pod spec as each suite needs it (its image, a short grace).
import { SMCR_ANNOTATION } from '../../src/constants.js';

export function smcrDeployment(
  name: string,
  namespace: string,
  podSpec: Record<string, unknown>,
  replicas = 2,
): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations: { [SMCR_ANNOTATION]: 'true' } },
        spec: { automountServiceAccountToken: false, ...podSpec },
      },
    },
  };
}
