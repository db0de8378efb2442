// Serving certificate from files (our generated ones, or cert-manager's mounted Secret), reloaded
// when the files change. A pair that does not load keeps the previous one in service.
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { AppError } from '../errors.js';
import { certInfo } from './pki.js';

export interface KeyCert {
  readonly key: string;
  readonly cert: string;
  readonly notAfter: Date;
}

/** Reads and checks a key/certificate pair (they must match: createSecureContext verifies it). */
export function loadKeyCert(keyPath: string, certPath: string): KeyCert {
  let key: string;
  let cert: string;
  try {
    key = readFileSync(keyPath, 'utf8');
    cert = readFileSync(certPath, 'utf8');
  } catch (err) {
    throw new AppError(
      'CERTS_UNAVAILABLE',
      `cannot read serving certificate: ${(err as Error).message}`,
    );
  }
  return checkKeyCert(key, cert);
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

/** Watches the directory of the pair (Secret volumes swap a `..data` symlink) and calls back debounced. */
export function watchDir(dir: string, onChange: () => void, debounceMs = 150): FSWatcher {
  let timer: NodeJS.Timeout | undefined;
  const w = watch(dir, { persistent: false }, () => {
    clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  });
  w.on('close', () => clearTimeout(timer));
  return w;
}
