// Reading certificates with Node's own X.509 parser (OpenSSL): what the webhook checks on every
// pass (expiry, CA, names, signer, key) without loading node-forge, which only issuing needs
// (./pki.js, loaded when a certificate is made: #43, ~5 MB resident the rest of the time).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';

/** notBefore is backdated this much for clock skew between nodes (./pki.ts). */
export const CLOCK_SKEW_MS = 5 * 60 * 1000;

export interface CertInfo {
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly isCA: boolean;
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
}

/** One PEM certificate (throws on anything else). */
export function parseCert(pem: string): X509Certificate {
  return new X509Certificate(pem);
}

/** An IP address in one spelling (OpenSSL writes IPv6 in full, people and forge compress it). */
export function canonicalName(name: string): string {
  if (isIP(name) !== 6) return name;
  return new URL(`http://[${name}]/`).hostname.slice(1, -1);
}

/** The subject alternative names: DNS names, and IP addresses in canonical form. */
export function altNames(c: X509Certificate): { dns: string[]; ip: string[] } {
  const dns: string[] = [];
  const ip: string[] = [];
  for (const entry of (c.subjectAltName ?? '').split(', ')) {
    if (entry.startsWith('DNS:')) dns.push(entry.slice(4));
    else if (entry.startsWith('IP Address:')) ip.push(canonicalName(entry.slice(11)));
  }
  return { dns, ip };
}

export const notAfter = (c: X509Certificate): number => Date.parse(c.validTo);
export const notBefore = (c: X509Certificate): number => Date.parse(c.validFrom);

/** Reads what the checks need from a PEM certificate. */
export function certInfo(certPem: string): CertInfo {
  const c = parseCert(certPem);
  const { dns, ip } = altNames(c);
  return {
    notBefore: new Date(notBefore(c)),
    notAfter: new Date(notAfter(c)),
    isCA: c.ca,
    dnsNames: dns,
    ipAddresses: ip,
  };
}

/** Issued by `ca`: its subject is the issuer, and its key verifies the signature. */
export function signedBy(cert: X509Certificate, ca: X509Certificate): boolean {
  try {
    return cert.checkIssued(ca) && cert.verify(ca.publicKey);
  } catch {
    return false;
  }
}

/** The private key (PEM) is the certificate's. */
export function keyMatches(cert: X509Certificate, keyPem: string): boolean {
  return cert.checkPrivateKey(createPrivateKey(keyPem));
}

/** The DNS names a webhook Service is reached by. */
export function serviceNames(
  service: string,
  namespace: string,
  extra: readonly string[] = [],
): string[] {
  const names = [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
    ...extra,
  ];
  return [...new Set(names)];
}
