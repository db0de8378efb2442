// Certificate authority and serving certificates with node-forge: RSA-2048 keys (forge uses
// Node's native key generation), random serials, SANs, key usages right for each role, and
// notBefore backdated for clock skew between nodes. Reading certificates is ./x509.ts's (node:crypto):
// this module, and node-forge with it, is loaded only when a certificate is made.
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';
import { CLOCK_SKEW_MS } from './x509.js';

export interface KeyPairPem {
  readonly certPem: string;
  readonly keyPem: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export interface CertOptions {
  readonly now?: Date;
  /** Validity in days, or `validityMs` for finer control (one of the two). */
  readonly validityDays?: number;
  readonly validityMs?: number;
}

function validityOf(opts: CertOptions): number {
  const ms = opts.validityMs ?? (opts.validityDays ?? 0) * DAY_MS;
  if (!(ms > 0)) throw new RangeError('certificate validity must be positive');
  return ms;
}

function serial(): string {
  // 16 random bytes with the top bit cleared: a positive integer as RFC 5280 requires.
  const b = randomBytes(16);
  b[0] = (b[0] ?? 0) & 0x7f;
  return b.toString('hex');
}

function newCert(
  commonName: string,
  opts: CertOptions,
): { cert: forge.pki.Certificate; keys: forge.pki.rsa.KeyPair } {
  const keys = forge.pki.rsa.generateKeyPair({ bits: 2048, e: 0x10001 });
  const cert = forge.pki.createCertificate();
  const now = opts.now ?? new Date();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(now.getTime() - CLOCK_SKEW_MS);
  cert.validity.notAfter = new Date(now.getTime() + validityOf(opts));
  cert.setSubject([
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: 'erdma-smcr' },
  ]);
  return { cert, keys };
}

function pem(cert: forge.pki.Certificate, keys: forge.pki.rsa.KeyPair): KeyPairPem {
  return {
    certPem: forge.pki.certificateToPem(cert),
    keyPem: forge.pki.privateKeyToPem(keys.privateKey),
  };
}

/** A self-signed CA that may only sign end-entity certificates (pathLen 0). */
export function generateCA(commonName: string, opts: CertOptions): KeyPairPem {
  const { cert, keys } = newCert(commonName, opts);
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return pem(cert, keys);
}

/** A TLS server certificate for `names` (DNS names or IP addresses), signed by the CA. */
export function generateServingCert(
  ca: KeyPairPem,
  names: readonly string[],
  opts: CertOptions,
): KeyPairPem {
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const { cert, keys } = newCert(names[0] ?? 'localhost', opts);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: names.map((n) => (isIP(n) ? { type: 7, ip: n } : { type: 2, value: n })),
    },
    { name: 'subjectKeyIdentifier' },
    {
      name: 'authorityKeyIdentifier',
      keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes(),
    },
  ]);
  cert.sign(caKey as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return pem(cert, keys);
}
