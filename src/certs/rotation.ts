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
import forge from 'node-forge';
import { CLOCK_SKEW_MS, generateCA, generateServingCert, type KeyPairPem } from './pki.js';

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
  readonly cert: forge.pki.Certificate;
  readonly signing: forge.pki.Certificate;
  readonly next?: forge.pki.Certificate;
  readonly bundle: readonly forge.pki.Certificate[];
}

/** Splits a PEM bundle into its certificates (throws on garbage). */
export function splitPem(bundle: string): string[] {
  return (
    bundle
      .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)
      ?.map((c) => `${c}\n`) ?? []
  );
}

const fingerprint = (c: forge.pki.Certificate): string =>
  forge.md.sha256
    .create()
    .update(forge.asn1.toDer(forge.pki.certificateToAsn1(c)).getBytes())
    .digest()
    .toHex();

function isCA(c: forge.pki.Certificate): boolean {
  return (c.getExtension('basicConstraints') as { cA?: boolean } | null)?.cA === true;
}

/** Issued-at time: our certificates are backdated by CLOCK_SKEW_MS, which is not lifetime. */
function lifetime(c: forge.pki.Certificate): { issued: number; end: number } {
  const end = c.validity.notAfter.getTime();
  const start = c.validity.notBefore.getTime();
  return { issued: end - start > CLOCK_SKEW_MS ? start + CLOCK_SKEW_MS : start, end };
}

/** True when less than a third of the certificate's lifetime is left. */
export function nearExpiry(c: forge.pki.Certificate, now: number): boolean {
  const { issued, end } = lifetime(c);
  return end - now < (end - issued) / 3;
}

function sans(c: forge.pki.Certificate): Set<string> {
  const alt =
    (
      c.getExtension('subjectAltName') as {
        altNames?: { type: number; value?: string; ip?: string }[];
      } | null
    )?.altNames ?? [];
  return new Set(alt.map((a) => (a.type === 7 ? (a.ip ?? '') : (a.value ?? ''))));
}

function signedBy(cert: forge.pki.Certificate, ca: forge.pki.Certificate): boolean {
  try {
    return ca.verify(cert);
  } catch {
    return false;
  }
}

function keyMatches(certPem: string, keyPem: string): boolean {
  const cert = forge.pki.certificateFromPem(certPem);
  const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const pub = cert.publicKey as forge.pki.rsa.PublicKey;
  return pub.n.equals(key.n) && pub.e.equals(key.e);
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
    const cert = forge.pki.certificateFromPem(d[SECRET_KEYS.cert] as string);
    const signing = forge.pki.certificateFromPem(d[SECRET_KEYS.caCert] as string);
    if (!isCA(signing)) return `${SECRET_KEYS.caCert} is not a CA certificate`;
    if (!keyMatches(d[SECRET_KEYS.caCert] as string, d[SECRET_KEYS.caKey] as string))
      return `${SECRET_KEYS.caKey} does not match ${SECRET_KEYS.caCert}`;
    if (!keyMatches(d[SECRET_KEYS.cert] as string, d[SECRET_KEYS.key] as string))
      return `${SECRET_KEYS.key} does not match ${SECRET_KEYS.cert}`;
    const bundle = splitPem(d[SECRET_KEYS.bundle] as string).map((p) =>
      forge.pki.certificateFromPem(p),
    );
    const nextPem = d[SECRET_KEYS.nextCert];
    const next =
      nextPem && d[SECRET_KEYS.nextKey] ? forge.pki.certificateFromPem(nextPem) : undefined;
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
  if (now >= p.signing.validity.notAfter.getTime())
    return { action: 'create', reason: 'the signing CA has expired' };
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
  if (p.bundle.some((c) => now >= c.validity.notAfter.getTime()))
    return { action: 'prune-bundle', reason: 'ca.crt holds an expired CA' };
  return { action: 'none' };
}

function servingProblem(p: Parsed, policy: RotationPolicy, now: number): string | undefined {
  if (!signedBy(p.cert, p.signing))
    return 'the serving certificate is not signed by the signing CA';
  const have = sans(p.cert);
  const missing = policy.names.filter((n) => !have.has(n));
  if (missing.length > 0) return `the serving certificate lacks names: ${missing.join(', ')}`;
  if (nearExpiry(p.cert, now))
    return 'the serving certificate has less than a third of its lifetime left';
  if (p.cert.validity.notAfter.getTime() > p.signing.validity.notAfter.getTime())
    return 'the serving certificate outlives its CA';
  return undefined;
}

/** Side-effect-free: why this Secret needs new certificates or a rotation step, or undefined. */
export function needsRegeneration(
  secret: CertSecret | undefined,
  policy: RotationPolicy,
  now = Date.now(),
): string | undefined {
  const step = assess(secret, policy, now);
  return step.action === 'none' ? undefined : step.reason;
}

const ca = (validityMs: number, now: number): KeyPairPem =>
  generateCA('erdma-smcr-webhook-ca', { now: new Date(now), validityMs });

function serving(signer: KeyPairPem, policy: RotationPolicy, now: number): KeyPairPem {
  // Never outlive the CA: an API server would reject the chain once the CA expires.
  const caEnd = forge.pki.certificateFromPem(signer.certPem).validity.notAfter.getTime();
  return generateServingCert(signer, policy.names, {
    now: new Date(now),
    validityMs: Math.min(policy.certValidityMs, caEnd - now),
  });
}

function liveBundle(pems: readonly string[], now: number): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const pem of pems) {
    const c = forge.pki.certificateFromPem(pem);
    const fp = fingerprint(c);
    if (seen.has(fp) || now >= c.validity.notAfter.getTime()) continue;
    seen.add(fp);
    out.push(pem.endsWith('\n') ? pem : `${pem}\n`);
  }
  return out.join('');
}

/** The Secret after `step` (keys generated here). */
export function advance(
  secret: CertSecret | undefined,
  step: Step,
  policy: RotationPolicy,
  now: number,
): CertSecret {
  const d = { ...(secret?.data ?? {}) };
  const annotations = { ...(secret?.annotations ?? {}) };
  const bundle = splitPem(d[SECRET_KEYS.bundle] ?? '');
  const setServing = (signer: KeyPairPem): void => {
    const s = serving(signer, policy, now);
    d[SECRET_KEYS.cert] = s.certPem;
    d[SECRET_KEYS.key] = s.keyPem;
  };
  const signing = (): KeyPairPem => ({
    certPem: d[SECRET_KEYS.caCert] as string,
    keyPem: d[SECRET_KEYS.caKey] as string,
  });
  switch (step.action) {
    case 'none':
      return { data: d, annotations };
    case 'create': {
      const c = ca(policy.caValidityMs, now);
      delete d[SECRET_KEYS.nextCert];
      delete d[SECRET_KEYS.nextKey];
      delete annotations[NEXT_CA_SINCE_ANNOTATION];
      d[SECRET_KEYS.caCert] = c.certPem;
      d[SECRET_KEYS.caKey] = c.keyPem;
      // Keep still-valid CAs the API servers may hold for the old certificate.
      d[SECRET_KEYS.bundle] = liveBundle([c.certPem, ...bundle.filter(isParsable)], now);
      setServing(c);
      break;
    }
    case 'add-next-ca': {
      const c = ca(policy.caValidityMs, now);
      d[SECRET_KEYS.nextCert] = c.certPem;
      d[SECRET_KEYS.nextKey] = c.keyPem;
      d[SECRET_KEYS.bundle] = liveBundle([...bundle, c.certPem], now);
      annotations[NEXT_CA_SINCE_ANNOTATION] = new Date(now).toISOString();
      break;
    }
    case 'promote-ca':
      d[SECRET_KEYS.caCert] = d[SECRET_KEYS.nextCert] as string;
      d[SECRET_KEYS.caKey] = d[SECRET_KEYS.nextKey] as string;
      delete d[SECRET_KEYS.nextCert];
      delete d[SECRET_KEYS.nextKey];
      delete annotations[NEXT_CA_SINCE_ANNOTATION];
      setServing(signing());
      d[SECRET_KEYS.bundle] = liveBundle(bundle, now);
      break;
    case 'reissue':
      setServing(signing());
      break;
    case 'prune-bundle':
      d[SECRET_KEYS.bundle] = liveBundle(bundle, now);
      break;
  }
  return { data: d, annotations };
}

function isParsable(pem: string): boolean {
  try {
    forge.pki.certificateFromPem(pem);
    return true;
  } catch {
    return false;
  }
}

/** The CA certificates a Secret says the API server must trust (for caBundle). */
export function trustBundle(secret: CertSecret): string {
  return secret.data[SECRET_KEYS.bundle] ?? '';
}
