// Where the webhook's serving certificate comes from, whatever keeps it: one object that has the
// current pair and says when there is a new one, as controller-runtime's certwatcher does. Files
// (our generated development pair, or cert-manager's mounted Secret) are watched, with a polling
// fallback; a Secret we keep ourselves is followed by SecretCertManager (./bootstrap.ts). A pair
// that does not load is reported and the previous one stays in service.
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import { AppError } from '../errors.js';
import { certInfo } from './x509.js';

/** A key and certificate that load together, and when the certificate expires. */
export interface KeyCert {
  readonly key: string;
  readonly cert: string;
  readonly notAfter: Date;
}

export interface CertificateSource {
  /** The pair to serve now. */
  current(): KeyCert;
  /**
   * Calls `onPair` with each new pair that loads, from now on, and `onError` with why a changed
   * pair does not (the previous one is kept).
   */
  subscribe(onPair: (pair: KeyCert) => void, onError: (reason: string) => void): void;
  close(): Promise<void>;
}

/** Checks that a key and certificate load together (createSecureContext verifies they match). */
export function checkKeyCert(key: string, cert: string): KeyCert {
  try {
    createSecureContext({ key, cert });
    return { key, cert, notAfter: certInfo(cert).notAfter };
  } catch (err) {
    throw new AppError(
      'CERTS_UNAVAILABLE',
      `serving certificate and key do not load: ${(err as Error).message}`,
    );
  }
}

/** Calls every subscriber; what CertificateSource implementations share. */
export class PairEvents {
  private readonly subscribers: { onPair: (p: KeyCert) => void; onError: (r: string) => void }[] =
    [];

  subscribe(onPair: (pair: KeyCert) => void, onError: (reason: string) => void): void {
    this.subscribers.push({ onPair, onError });
  }

  pair(p: KeyCert): void {
    for (const s of this.subscribers) s.onPair(p);
  }

  error(reason: string): void {
    for (const s of this.subscribers) s.onError(reason);
  }

  /**
   * The swap both sources make: a new key and certificate that load together are served (`serve`
   * keeps them) and every subscriber is told; a pair that does not load tells them why instead,
   * and the pair served stays.
   */
  swap(key: string, cert: string, serve: (pair: KeyCert) => void): void {
    let pair: KeyCert;
    try {
      pair = checkKeyCert(key, cert);
    } catch (err) {
      return this.error((err as Error).message);
    }
    serve(pair);
    this.pair(pair);
  }
}

/** How often the files are compared with what is served, besides the directory watch. */
const POLL_MS = 10_000;
/** Events of one Secret volume swap (several renames) become one reload. */
const DEBOUNCE_MS = 150;

/**
 * A pair in two files. The directory is watched for events naming them, or a Secret volume's
 * `..data` swap; a poll catches what a watch misses (some filesystems never tell). Either way the
 * files' bytes are compared with what is served before anything is parsed.
 */
export class FileCertificates implements CertificateSource {
  private pair: KeyCert;
  private readonly events = new PairEvents();
  private readonly watcher: FSWatcher | undefined;
  private readonly poller: NodeJS.Timeout;
  private debounce: NodeJS.Timeout | undefined;

  constructor(
    private readonly keyPath: string,
    private readonly certPath: string,
    opts: { readonly pollMs?: number } = {},
  ) {
    this.pair = this.load();
    const names = new Set([basename(keyPath), basename(certPath), '..data']);
    try {
      this.watcher = watch(dirname(certPath), { persistent: false }, (_event, file) => {
        if (file !== null && !names.has(file.toString())) return;
        clearTimeout(this.debounce);
        this.debounce = setTimeout(() => this.check(), DEBOUNCE_MS);
      });
    } catch {
      this.watcher = undefined; // the poll alone
    }
    this.poller = setInterval(() => this.check(), opts.pollMs ?? POLL_MS);
    this.poller.unref();
  }

  private read(): { key: string; cert: string } {
    try {
      return { key: readFileSync(this.keyPath, 'utf8'), cert: readFileSync(this.certPath, 'utf8') };
    } catch (err) {
      throw new AppError(
        'CERTS_UNAVAILABLE',
        `cannot read serving certificate: ${(err as Error).message}`,
      );
    }
  }

  private load(): KeyCert {
    const { key, cert } = this.read();
    return checkKeyCert(key, cert);
  }

  current(): KeyCert {
    return this.pair;
  }

  subscribe(onPair: (pair: KeyCert) => void, onError: (reason: string) => void): void {
    this.events.subscribe(onPair, onError);
  }

  /** Reads the files; a pair that differs from the one served is checked and, when it loads, served. */
  check(): void {
    let files: { key: string; cert: string };
    try {
      files = this.read();
    } catch (err) {
      return this.events.error((err as Error).message);
    }
    if (files.key === this.pair.key && files.cert === this.pair.cert) return;
    this.events.swap(files.key, files.cert, (pair) => (this.pair = pair));
  }

  async close(): Promise<void> {
    clearTimeout(this.debounce);
    clearInterval(this.poller);
    this.watcher?.close();
  }
}
