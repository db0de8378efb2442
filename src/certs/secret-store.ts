// Where the webhook keeps its certificates: a Secret, read and written with the resourceVersion
// it was read at (src/certs/bootstrap.ts runs the rest).
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeClient } from '../cluster/client.js';
import { apiStatus } from '../cluster/client.js';
import type { CertSecret } from './rotation.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const unb64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

/** Where the certificate Secret lives; narrow so the rotation logic never sees the API types. */
export interface SecretStore {
  read(): Promise<{ readonly secret: CertSecret; readonly resourceVersion: string } | undefined>;
  /** 'exists' when another replica created it first. */
  create(secret: CertSecret): Promise<'ok' | 'exists'>;
  /** 'conflict' when it changed since `resourceVersion` was read. */
  update(secret: CertSecret, resourceVersion: string): Promise<'ok' | 'conflict'>;
}

export function secretFromApi(s: V1Secret): CertSecret {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.data ?? {})) data[k] = unb64(v);
  return { data, annotations: { ...(s.metadata?.annotations ?? {}) } };
}

export class KubeSecretStore implements SecretStore {
  private readonly collection: string;
  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly name: string,
  ) {
    this.collection = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  }

  async read(): Promise<{ secret: CertSecret; resourceVersion: string } | undefined> {
    const s = await this.client.get<V1Secret>(
      `${this.collection}/${encodeURIComponent(this.name)}`,
    );
    return s && { secret: secretFromApi(s), resourceVersion: s.metadata?.resourceVersion ?? '' };
  }

  private body(secret: CertSecret, resourceVersion?: string): V1Secret {
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(secret.data)) data[k] = b64(v);
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name: this.name,
        namespace: this.namespace,
        annotations: secret.annotations,
        labels: {
          'app.kubernetes.io/name': 'erdma-smcr',
          'app.kubernetes.io/component': 'webhook-certs',
        },
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      data,
    };
  }

  async create(secret: CertSecret): Promise<'ok' | 'exists'> {
    try {
      await this.client.request('POST', this.collection, { body: this.body(secret) });
      return 'ok';
    } catch (err) {
      if (apiStatus(err) === 409) return 'exists';
      throw err;
    }
  }

  async update(secret: CertSecret, resourceVersion: string): Promise<'ok' | 'conflict'> {
    try {
      await this.client.request('PUT', `${this.collection}/${encodeURIComponent(this.name)}`, {
        body: this.body(secret, resourceVersion),
      });
      return 'ok';
    } catch (err) {
      if (apiStatus(err) === 409) return 'conflict';
      throw err;
    }
  }
}
