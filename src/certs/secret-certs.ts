// One reconciliation pass of the certificates kept in a Secret: CA, serving certificate, caBundle.
import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import {
  assess,
  splitPem,
  trustBundle,
  type CertSecret,
  type RotationPolicy,
  type Step,
} from './rotation.js';
import type { BundleTarget } from './bundle-target.js';
import type { SecretStore } from './secret-store.js';

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
