// Local development certificates in a directory (webhook-certs/ by default): a CA and a serving
// certificate, generated when absent or unusable, written with owner-only permissions.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../errors.js';
import { writeAtomic } from '../util/fs.js';
import { CERT_FILES, certFilesPresent, certPaths, type CertPaths } from './files.js';
import { generateCA, generateServingCert } from './pki.js';
import { serviceNames } from './x509.js';

export interface LocalCertOptions {
  readonly dir: string;
  readonly service: string;
  readonly namespace: string;
  readonly extraNames?: readonly string[];
  readonly validityDays?: number;
  /** Also valid for localhost and 127.0.0.1 (local development; default true). */
  readonly localhost?: boolean;
}

/**
 * Refuses to write into a directory holding part of a set: a certificate without its key (or a key
 * without its certificate) was put there by someone else, and making the rest would overwrite it.
 * A CA pair alone is fine: the serving pair is made from it, and nothing there is replaced.
 */
function refusePartial(dir: string): void {
  const has = (f: string): boolean => existsSync(join(dir, f));
  const pairs = [
    [CERT_FILES.caCert, CERT_FILES.caKey],
    [CERT_FILES.cert, CERT_FILES.key],
  ] as const;
  const halves: [string, string][] = pairs
    .filter(([a, b]) => has(a) !== has(b))
    .map(([a, b]) => (has(a) ? [a, b] : [b, a]));
  const servingOnly = has(CERT_FILES.cert) && has(CERT_FILES.key) && !has(CERT_FILES.caCert);
  if (halves.length === 0 && !servingOnly) return;
  const what =
    halves.length > 0
      ? halves.map(([present, missing]) => `${join(dir, present)} without ${missing}`).join('; ')
      : `a serving certificate and key without ${CERT_FILES.caCert} and ${CERT_FILES.caKey}`;
  throw new AppError(
    'CERTS_UNAVAILABLE',
    `${dir} holds ${what}: not generating certificates over files this command did not make. ` +
      'Complete the set (ca.crt, ca.key, tls.crt, tls.key), move those files away, or choose another directory.',
  );
}

/** Ensures CA and serving certificate exist in `dir`; returns whether they were generated. */
export function ensureLocalCerts(opts: LocalCertOptions): { generated: boolean; paths: CertPaths } {
  const paths = certPaths(opts.dir);
  if (certFilesPresent(opts.dir)) return { generated: false, paths };
  refusePartial(opts.dir);
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  const validityDays = opts.validityDays ?? 365;
  const caKeyPath = join(opts.dir, CERT_FILES.caKey);
  const ca =
    existsSync(paths.caCert) && existsSync(caKeyPath)
      ? { certPem: readFileSync(paths.caCert, 'utf8'), keyPem: readFileSync(caKeyPath, 'utf8') }
      : generateCA('erdma-smcr-webhook-ca', { validityDays: validityDays * 3 });
  const local = opts.localhost === false ? [] : ['localhost', '127.0.0.1'];
  const names = serviceNames(opts.service, opts.namespace, [...local, ...(opts.extraNames ?? [])]);
  const serving = generateServingCert(ca, names, { validityDays });
  writeAtomic(caKeyPath, ca.keyPem, 0o600);
  writeAtomic(paths.caCert, ca.certPem, 0o644);
  // Key before certificate: a watcher that reloads on the certificate sees a matching key.
  writeAtomic(paths.key, serving.keyPem, 0o600);
  writeAtomic(paths.cert, serving.certPem, 0o644);
  return { generated: true, paths };
}

export { CERT_FILES, certPaths, type CertPaths } from './files.js';
