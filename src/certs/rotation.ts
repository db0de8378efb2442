// What the certificate Secret should hold, decided without side effects: `assess` says what (if
// anything) must change and why; `advance` produces the next Secret data for that step.
//
// Secret layout (type kubernetes.io/tls):
//   tls.crt, tls.key          serving certificate and key
//   ca.crt                    every CA the API server must trust (the caBundle), PEM concatenated
//   ca-signing.crt/.key       the CA that signs serving certificates now
//   ca-next.crt/.key          during a CA rotation: the successor, already in ca.crt, not signing yet
//   annotation smcr.erdma.io/ca-next-since: when the successor entered ca.crt
//
// CA rotation in two steps, so no API server ever meets a certificate it cannot verify:
// 1. the successor joins ca.crt (and so every caBundle) next to the current CA;
// 2. once that has been published for `promotionDelayMs`, it signs a new serving certificate.
// The old CA stays in ca.crt until it expires.
//
// Certificates are read with node:crypto (./x509.ts); making them (./advance.ts, node-forge) is
// loaded only when a step needs new ones.
import type { X509Certificate } from 'node:crypto';
import {
  altNames,
  canonicalName,
  CLOCK_SKEW_MS,
  keyMatches,
  notAfter,
  notBefore,
  parseCert,
  signedBy,
} from './x509.js';

export const SECRET_KEYS = {
  cert: 'tls.crt',
  key: 'tls.key',
  bundle: 'ca.crt',
  caCert: 'ca-signing.crt',
  caKey: 'ca-signing.key',
  nextCert: 'ca-next.crt',
  nextKey: 'ca-next.key',
} as const;
export const NEXT_CA_SINCE_ANNOTATION = 'smcr.erdma.io/ca-next-since';

/** Secret contents as strings (decoded from base64). */
export interface CertSecret {
  readonly data: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface RotationPolicy {
  /** DNS names (and IPs) the serving certificate must carry. */
  readonly names: readonly string[];
  readonly caValidityMs: number;
  readonly certValidityMs: number;
  /** How long a new CA sits in the caBundle before it signs. */
  readonly promotionDelayMs: number;
}

export type Step =
  | { readonly action: 'none' }
  | { readonly action: 'create'; readonly reason: string }
  | { readonly action: 'add-next-ca'; readonly reason: string }
  | { readonly action: 'promote-ca'; readonly reason: string }
  | { readonly action: 'reissue'; readonly reason: string }
  | { readonly action: 'prune-bundle'; readonly reason: string };

interface Parsed {
  readonly cert: X509Certificate;
  readonly signing: X509Certificate;
  readonly next?: X509Certificate;
  readonly bundle: readonly X509Certificate[];
}

/** Splits a PEM bundle into its certificates (throws on garbage). */
export function splitPem(bundle: string): string[] {
  return (
    bundle
      .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)
      ?.map((c) => `${c}\n`) ?? []
  );
}

export const fingerprint = (c: X509Certificate): string => c.fingerprint256;

/** Issued-at time: our certificates are backdated by CLOCK_SKEW_MS, which is not lifetime. */
function lifetime(c: X509Certificate): { issued: number; end: number } {
  const end = notAfter(c);
  const start = notBefore(c);
  return { issued: end - start > CLOCK_SKEW_MS ? start + CLOCK_SKEW_MS : start, end };
}

/** True when less than a third of the certificate's lifetime is left. */
export function nearExpiry(c: X509Certificate, now: number): boolean {
  const { issued, end } = lifetime(c);
  return end - now < (end - issued) / 3;
}

function sans(c: X509Certificate): Set<string> {
  const { dns, ip } = altNames(c);
  return new Set([...dns, ...ip]);
}

function parse(s: CertSecret): Parsed | string {
  const d = s.data;
  const required = [
    SECRET_KEYS.cert,
    SECRET_KEYS.key,
    SECRET_KEYS.bundle,
    SECRET_KEYS.caCert,
    SECRET_KEYS.caKey,
  ];
  const missing = required.filter((k) => !d[k]);
  if (missing.length > 0) return `missing keys: ${missing.join(', ')}`;
  try {
    const cert = parseCert(d[SECRET_KEYS.cert] as string);
    const signing = parseCert(d[SECRET_KEYS.caCert] as string);
    if (!signing.ca) return `${SECRET_KEYS.caCert} is not a CA certificate`;
    if (!keyMatches(signing, d[SECRET_KEYS.caKey] as string))
      return `${SECRET_KEYS.caKey} does not match ${SECRET_KEYS.caCert}`;
    if (!keyMatches(cert, d[SECRET_KEYS.key] as string))
      return `${SECRET_KEYS.key} does not match ${SECRET_KEYS.cert}`;
    const bundle = splitPem(d[SECRET_KEYS.bundle] as string).map(parseCert);
    const nextPem = d[SECRET_KEYS.nextCert];
    const next = nextPem && d[SECRET_KEYS.nextKey] ? parseCert(nextPem) : undefined;
    return { cert, signing, bundle, ...(next ? { next } : {}) };
  } catch (err) {
    return `unreadable certificate or key: ${(err as Error).message}`;
  }
}

/** The next step for this Secret (`create` when there is none or it is unusable). */
export function assess(secret: CertSecret | undefined, policy: RotationPolicy, now: number): Step {
  if (!secret) return { action: 'create', reason: 'no certificate Secret yet' };
  const p = parse(secret);
  if (typeof p === 'string') return { action: 'create', reason: p };
  const inBundle = new Set(p.bundle.map(fingerprint));
  if (!inBundle.has(fingerprint(p.signing)))
    return { action: 'create', reason: 'the signing CA is not in ca.crt' };
  if (now >= notAfter(p.signing)) return { action: 'create', reason: 'the signing CA has expired' };
  if (p.next) {
    if (!inBundle.has(fingerprint(p.next)))
      return { action: 'create', reason: 'the next CA is not in ca.crt' };
    const since = Date.parse(secret.annotations[NEXT_CA_SINCE_ANNOTATION] ?? '');
    if (!Number.isFinite(since) || now - since >= policy.promotionDelayMs) {
      return {
        action: 'promote-ca',
        reason: 'the next CA has been in the caBundle long enough to sign',
      };
    }
  } else if (nearExpiry(p.signing, now)) {
    return { action: 'add-next-ca', reason: 'the CA has less than a third of its lifetime left' };
  }
  const reissue = servingProblem(p, policy, now);
  if (reissue) return { action: 'reissue', reason: reissue };
  if (p.bundle.some((c) => now >= notAfter(c)))
    return { action: 'prune-bundle', reason: 'ca.crt holds an expired CA' };
  return { action: 'none' };
}

function servingProblem(p: Parsed, policy: RotationPolicy, now: number): string | undefined {
  if (!signedBy(p.cert, p.signing))
    return 'the serving certificate is not signed by the signing CA';
  const have = sans(p.cert);
  const missing = policy.names.filter((n) => !have.has(canonicalName(n)));
  if (missing.length > 0) return `the serving certificate lacks names: ${missing.join(', ')}`;
  if (nearExpiry(p.cert, now))
    return 'the serving certificate has less than a third of its lifetime left';
  if (notAfter(p.cert) > notAfter(p.signing)) return 'the serving certificate outlives its CA';
  return undefined;
}

/** The CA certificates a Secret says the API server must trust (for caBundle). */
export function trustBundle(secret: CertSecret): string {
  return secret.data[SECRET_KEYS.bundle] ?? '';
}
