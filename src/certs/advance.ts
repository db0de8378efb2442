// The next certificate Secret for a rotation step (./rotation.ts decides the step): keys and
// certificates made here, with node-forge (./pki.ts). Loaded only when a step needs them (#43).
import { generateCA, generateServingCert, type KeyPairPem } from './pki.js';
import {
  fingerprint,
  NEXT_CA_SINCE_ANNOTATION,
  SECRET_KEYS,
  splitPem,
  type CertSecret,
  type RotationPolicy,
  type Step,
} from './rotation.js';
import { notAfter, parseCert } from './x509.js';

const ca = (validityMs: number, now: number): KeyPairPem =>
  generateCA('erdma-smcr-webhook-ca', { now: new Date(now), validityMs });

function serving(signer: KeyPairPem, policy: RotationPolicy, now: number): KeyPairPem {
  // Never outlive the CA: an API server would reject the chain once the CA expires.
  const caEnd = notAfter(parseCert(signer.certPem));
  return generateServingCert(signer, policy.names, {
    now: new Date(now),
    validityMs: Math.min(policy.certValidityMs, caEnd - now),
  });
}

function liveBundle(pems: readonly string[], now: number): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const pem of pems) {
    const c = parseCert(pem);
    const fp = fingerprint(c);
    if (seen.has(fp) || now >= notAfter(c)) continue;
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
    parseCert(pem);
    return true;
  } catch {
    return false;
  }
}
