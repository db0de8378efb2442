// Where the caBundle goes: the caBundle of our webhook configurations, set by name.
import type {
  V1MutatingWebhookConfiguration,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { AppError } from '../errors.js';
import type { KubeClient } from '../cluster/client.js';
import { apiStatus } from '../cluster/client.js';

export type PublishResult = 'unchanged' | 'updated' | 'missing';

/** Where the caBundle goes: the webhook configurations, by name. */
export interface BundleTarget {
  readonly description: string;
  publish(bundlePem: string): Promise<PublishResult>;
}

type WebhookConfig = V1MutatingWebhookConfiguration | V1ValidatingWebhookConfiguration;

/** Sets caBundle on every webhook of one Mutating- or ValidatingWebhookConfiguration. */
export class WebhookConfigTarget implements BundleTarget {
  readonly description: string;
  private readonly path: string;
  constructor(
    private readonly client: KubeClient,
    kind: 'mutating' | 'validating',
    name: string,
  ) {
    this.description = `${kind === 'mutating' ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration'}/${name}`;
    this.path = `/apis/admissionregistration.k8s.io/v1/${kind}webhookconfigurations/${encodeURIComponent(name)}`;
  }

  private get(): Promise<WebhookConfig> {
    return this.client.request<WebhookConfig>('GET', this.path);
  }

  private replace(body: WebhookConfig): Promise<WebhookConfig> {
    return this.client.request<WebhookConfig>('PUT', this.path, { body });
  }

  async publish(bundlePem: string): Promise<PublishResult> {
    const want = Buffer.from(bundlePem).toString('base64');
    for (let attempt = 0; attempt < 5; attempt++) {
      let cfg: WebhookConfig;
      try {
        cfg = await this.get();
      } catch (err) {
        if (apiStatus(err) === 404) return 'missing';
        throw err;
      }
      const hooks = cfg.webhooks ?? [];
      if (hooks.every((h) => h.clientConfig.caBundle === want)) return 'unchanged';
      for (const h of hooks) h.clientConfig.caBundle = want;
      try {
        await this.replace(cfg);
        return 'updated';
      } catch (err) {
        if (apiStatus(err) !== 409) throw err;
      }
    }
    throw new AppError('CERTS_BOOTSTRAP', `${this.description}: caBundle update kept conflicting`);
  }
}
