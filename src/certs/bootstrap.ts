// Certificates kept in a Secret by the webhook itself (the default in-cluster mode, as
// cert-manager's and Istio's webhooks do): ensure CA → ensure serving certificate → ensure the
// caBundle of our webhook configurations; renew and rotate in the background; every replica
// follows the Secret through a watch and swaps its TLS certificate without a restart.
import type {
  V1MutatingWebhookConfiguration,
  V1Secret,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import type { KubeClient } from '../cluster/client.js';
import { apiReason, apiStatus } from '../cluster/client.js';
import { WatchedSet } from '../cluster/watch.js';
import { checkKeyCert, PairEvents, type CertificateSource, type KeyCert } from './source.js';
import {
  assess,
  SECRET_KEYS,
  splitPem,
  trustBundle,
  type CertSecret,
  type RotationPolicy,
  type Step,
} from './rotation.js';

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

export type PublishResult = 'unchanged' | 'updated' | 'missing';

/** Where the caBundle goes: the webhook configurations, by name. */
export interface BundleTarget {
  readonly description: string;
  publish(bundlePem: string): Promise<PublishResult>;
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
    const want = b64(bundlePem);
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

export interface SecretCertsOptions {
  readonly store: SecretStore;
  readonly targets: readonly BundleTarget[];
  readonly policy: RotationPolicy;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Told about each step taken (for metrics). */
  readonly onStep?: (step: Step['action']) => void;
}

export interface Ensured {
  readonly secret: CertSecret;
  /** Steps this call performed (empty when the Secret was already right). */
  readonly steps: readonly Step['action'][];
}

/**
 * One reconciliation pass, safe to run from every replica at once: read, decide, write with the
 * read resourceVersion; on AlreadyExists or a conflict, re-read and decide again.
 */
export class SecretCerts {
  private readonly now: () => number;
  constructor(private readonly opts: SecretCertsOptions) {
    this.now = opts.now ?? Date.now;
  }

  async ensure(): Promise<Ensured> {
    const steps: Step['action'][] = [];
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await this.opts.store.read();
      if (current) await this.publish(current.secret);
      const step = assess(current?.secret, this.opts.policy, this.now());
      if (step.action === 'none')
        return { secret: (current as { secret: CertSecret }).secret, steps };
      if (step.action === 'promote-ca' && !(await this.published(current?.secret))) {
        // Never sign with a CA some webhook configuration does not trust yet.
        return { secret: (current as { secret: CertSecret }).secret, steps };
      }
      // Making certificates loads node-forge: only now, not for the checks every interval.
      const { advance } = await import('./advance.js');
      const next = advance(current?.secret, step, this.opts.policy, this.now());
      const result = current
        ? await this.opts.store.update(next, current.resourceVersion)
        : await this.opts.store.create(next);
      if (result !== 'ok') {
        this.opts.logger.debug({ result }, 'certificate Secret changed under us; re-reading');
        continue;
      }
      this.opts.logger.info(
        { step: step.action, reason: step.reason },
        'certificate Secret updated',
      );
      this.opts.onStep?.(step.action);
      steps.push(step.action);
      await this.publish(next);
    }
    if (steps.length > 0) {
      const last = await this.opts.store.read();
      if (last) return { secret: last.secret, steps };
    }
    throw new AppError(
      'CERTS_BOOTSTRAP',
      'the certificate Secret kept changing under us (10 attempts)',
    );
  }

  /** Writes the Secret's trust bundle into every target; true when none is missing or stale. */
  private async publish(secret: CertSecret): Promise<boolean> {
    const bundle = trustBundle(secret);
    if (splitPem(bundle).length === 0) return false;
    let complete = true;
    for (const t of this.opts.targets) {
      const r = await t.publish(bundle);
      if (r === 'updated') this.opts.logger.info({ target: t.description }, 'caBundle updated');
      if (r === 'missing') {
        complete = false;
        this.opts.logger.warn(
          { target: t.description },
          'webhook configuration not found; caBundle not set (is it installed?)',
        );
      }
    }
    return complete;
  }

  private async published(secret: CertSecret | undefined): Promise<boolean> {
    return secret !== undefined && (await this.publish(secret));
  }
}

export interface CertManagerOptions extends SecretCertsOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly secretName: string;
  /** How often to re-check expiry and the caBundle (drift repair). */
  readonly checkIntervalMs: number;
  readonly onStale?: (stale: boolean) => void;
}

/**
 * Runs SecretCerts at start and then periodically, and follows the Secret through a watch; the
 * webhook's certificate source in secret mode (its pair: the Secret's, once started).
 */
export class SecretCertManager implements CertificateSource {
  private readonly certs: SecretCerts;
  private readonly events = new PairEvents();
  private pair: KeyCert | undefined;
  private readonly watch: WatchedSet<V1Secret>;
  private timer: NodeJS.Timeout | undefined;
  private lastCert = '';
  private running: Promise<void> | undefined;
  private again = false;
  private lastVersion = '';
  private closed = false;

  constructor(private readonly opts: CertManagerOptions) {
    this.certs = new SecretCerts(opts);
    this.watch = new WatchedSet<V1Secret>(opts.client, {
      path: `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/secrets`,
      fieldSelector: `metadata.name=${opts.secretName}`,
      logger: opts.logger,
      onChange: () => this.fromWatch(),
      ...(opts.onStale ? { onStale: opts.onStale } : {}),
    });
  }

  /** Ensures the Secret and returns the serving pair to start with; then keeps it current. */
  async start(): Promise<KeyCert> {
    let ensured: Ensured;
    try {
      ensured = await this.certs.ensure();
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new AppError(
        'CERTS_BOOTSTRAP',
        `cannot ensure the certificate Secret ${this.opts.namespace}/${this.opts.secretName}: ${apiReason(err)}`,
        { cause: err },
      );
    }
    const pair = checkKeyCert(
      ensured.secret.data[SECRET_KEYS.key] as string,
      ensured.secret.data[SECRET_KEYS.cert] as string,
    );
    this.pair = pair;
    this.lastCert = pair.cert;
    await this.watch.start();
    this.schedule();
    return pair;
  }

  current(): KeyCert {
    if (!this.pair) throw new Error('SecretCertManager.current() before start()');
    return this.pair;
  }

  subscribe(onPair: (pair: KeyCert) => void, onError: (reason: string) => void): void {
    this.events.subscribe(onPair, onError);
  }

  /**
   * One reconciliation now (also what the timer runs). Asked for while one runs, it runs once more
   * afterwards: the running pass may have read the Secret before the change that asked for it.
   */
  check(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.certs
      .ensure()
      .then((e) => this.serve(e.secret))
      .catch((err: unknown) =>
        this.opts.logger.error(
          { reason: err instanceof AppError ? err.message : apiReason(err) },
          'certificate check failed; will retry',
        ),
      )
      .finally(() => {
        this.running = undefined;
        if (this.again && !this.closed) {
          this.again = false;
          void this.check();
        }
      });
    return this.running;
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(
      () => void this.check().then(() => this.schedule()),
      this.opts.checkIntervalMs,
    );
    this.timer.unref();
  }

  /**
   * A changed Secret: serve its pair at once, and reconcile again. Another replica may have just
   * rotated, and a pass of ours that read the Secret before that must not leave its older
   * caBundle in place until the next timer tick.
   */
  private fromWatch(): void {
    const s = this.watch.get(this.opts.secretName, this.opts.namespace);
    if (!s) return;
    this.serve(secretFromApi(s));
    const version = s.metadata?.resourceVersion ?? '';
    if (version === this.lastVersion) return;
    this.lastVersion = version;
    if (!this.closed) void this.check();
  }

  private serve(secret: CertSecret): void {
    const cert = secret.data[SECRET_KEYS.cert];
    const key = secret.data[SECRET_KEYS.key];
    if (!cert || !key || cert === this.lastCert) return;
    this.lastCert = cert;
    this.events.swap(key, cert, (pair) => (this.pair = pair));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
    await this.watch.close();
  }
}
