// Certificates kept in a Secret by the webhook itself (the default in-cluster mode, as
// cert-manager's and Istio's webhooks do): ensure CA → ensure serving certificate → ensure the
// caBundle of our webhook configurations; renew and rotate in the background; every replica
// follows the Secret through a watch and swaps its TLS certificate without a restart.
import type { V1Secret } from '@kubernetes/client-node';
import { AppError } from '../errors.js';
import type { KubeClient } from '../cluster/client.js';
import { apiReason } from '../cluster/client.js';
import { WatchedSet } from '../cluster/watch.js';
import { checkKeyCert, PairEvents, type CertificateSource, type KeyCert } from './source.js';
import { SECRET_KEYS, type CertSecret } from './rotation.js';
import { SecretCerts, type Ensured, type SecretCertsOptions } from './secret-certs.js';
import { secretFromApi } from './secret-store.js';

export { KubeSecretStore, secretFromApi, type SecretStore } from './secret-store.js';
export { WebhookConfigTarget, type BundleTarget, type PublishResult } from './bundle-target.js';
export { SecretCerts, type Ensured, type SecretCertsOptions } from './secret-certs.js';

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
