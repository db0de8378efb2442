// Where the local certificates are (a CA and a serving certificate in one directory), apart from
// making them (./local.ts, node-forge): a webhook whose files exist never loads the maker.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const CERT_FILES = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  cert: 'tls.crt',
  key: 'tls.key',
} as const;

export interface CertPaths {
  readonly dir: string;
  readonly caCert: string;
  readonly cert: string;
  readonly key: string;
}

export function certPaths(dir: string): CertPaths {
  return {
    dir,
    caCert: join(dir, CERT_FILES.caCert),
    cert: join(dir, CERT_FILES.cert),
    key: join(dir, CERT_FILES.key),
  };
}

/** The CA, its key, the serving certificate and its key are all in `dir`. */
export function certFilesPresent(dir: string): boolean {
  const p = certPaths(dir);
  return [p.caCert, join(dir, CERT_FILES.caKey), p.cert, p.key].every((f) => existsSync(f));
}

/** The serving certificate and its key are both in `dir` (all the webhook needs to serve). */
export function servingPairPresent(dir: string): boolean {
  const p = certPaths(dir);
  return existsSync(p.cert) && existsSync(p.key);
}
