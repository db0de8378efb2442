// Local development certificates in a directory (webhook-certs/ by default): a CA and a serving
// certificate, generated when absent or unusable, written with owner-only permissions.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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

/** Ensures CA and serving certificate exist in `dir`; returns whether they were generated. */
export function ensureLocalCerts(opts: LocalCertOptions): { generated: boolean; paths: CertPaths } {
  const paths = certPaths(opts.dir);
  if (certFilesPresent(opts.dir)) return { generated: false, paths };
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
