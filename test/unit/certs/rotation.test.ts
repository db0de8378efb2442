// The rotation decisions, step by step, on a simulated clock (certificates carry that clock's
// dates; real handshakes with real dates are in test/integration/cluster/certs-bootstrap.test.ts).
import forge from 'node-forge';
import { describe, expect, it } from 'vitest';
import { generateCA } from '../../../src/certs/pki.js';
import { advance } from '../../../src/certs/advance.js';
import {
  assess,
  NEXT_CA_SINCE_ANNOTATION,
  SECRET_KEYS,
  splitPem,
  type CertSecret,
  type RotationPolicy,
} from '../../../src/certs/rotation.js';

/** Why a Secret needs a step (its reason), or undefined when it needs none: assess()'s answer. */
const why = (
  secret: CertSecret | undefined,
  p: RotationPolicy,
  now: number,
): string | undefined => {
  const step = assess(secret, p, now);
  return step.action === 'none' ? undefined : step.reason;
};

const S = 1000;
const policy: RotationPolicy = {
  names: ['erdma-smcr-webhook', 'erdma-smcr-webhook.erdma-smcr.svc'],
  caValidityMs: 900 * S,
  certValidityMs: 300 * S,
  promotionDelayMs: 60 * S,
};
const T0 = Date.UTC(2026, 0, 1);

function step(secret: CertSecret | undefined, now: number): { secret: CertSecret; action: string } {
  const s = assess(secret, policy, now);
  return { secret: advance(secret, s, policy, now), action: s.action };
}

const cert = (pem: string): forge.pki.Certificate => forge.pki.certificateFromPem(pem);
const bundleSubjects = (s: CertSecret): string[] =>
  splitPem(s.data[SECRET_KEYS.bundle] ?? '').map((p) => cert(p).serialNumber);
const verifies = (caPem: string, leafPem: string): boolean => cert(caPem).verify(cert(leafPem));

describe('certificate Secret rotation', () => {
  const first = step(undefined, T0).secret;

  it('creates CA and serving certificate with the right names, usages and backdating', () => {
    expect(assess(undefined, policy, T0)).toEqual({
      action: 'create',
      reason: 'no certificate Secret yet',
    });
    const leaf = cert(first.data[SECRET_KEYS.cert] as string);
    const ca = cert(first.data[SECRET_KEYS.caCert] as string);
    const alt = (
      leaf.getExtension('subjectAltName') as { altNames: { value: string }[] }
    ).altNames.map((a) => a.value);
    expect(alt).toEqual(policy.names);
    expect((ca.getExtension('basicConstraints') as { cA: boolean }).cA).toBe(true);
    expect((leaf.getExtension('extKeyUsage') as { serverAuth: boolean }).serverAuth).toBe(true);
    expect(leaf.validity.notBefore.getTime()).toBeLessThan(T0);
    expect(
      verifies(first.data[SECRET_KEYS.caCert] as string, first.data[SECRET_KEYS.cert] as string),
    ).toBe(true);
    expect(first.data[SECRET_KEYS.bundle]).toBe(first.data[SECRET_KEYS.caCert]);
    expect(leaf.serialNumber).not.toBe(
      cert(step(undefined, T0).secret.data[SECRET_KEYS.cert] as string).serialNumber,
    );
  });

  it('leaves a good Secret alone', () => {
    expect(why(first, policy, T0 + 10 * S)).toBeUndefined();
  });

  it('names the reason a Secret needs regeneration', () => {
    const without = (k: string): CertSecret => ({
      ...first,
      data: Object.fromEntries(Object.entries(first.data).filter(([key]) => key !== k)),
    });
    expect(why(without(SECRET_KEYS.key), policy, T0)).toBe('missing keys: tls.key');
    const notCA = {
      ...first,
      data: {
        ...first.data,
        [SECRET_KEYS.caCert]: first.data[SECRET_KEYS.cert] as string,
        [SECRET_KEYS.caKey]: first.data[SECRET_KEYS.key] as string,
      },
    };
    expect(why(notCA, policy, T0)).toBe('ca-signing.crt is not a CA certificate');
    expect(why(first, { ...policy, names: [...policy.names, 'extra.example'] }, T0)).toBe(
      'the serving certificate lacks names: extra.example',
    );
    expect(why(first, policy, T0 + 201 * S)).toBe(
      'the serving certificate has less than a third of its lifetime left',
    );
    expect(why(first, policy, T0 + 601 * S)).toBe(
      'the CA has less than a third of its lifetime left',
    );
    const garbage = { ...first, data: { ...first.data, [SECRET_KEYS.cert]: 'not a certificate' } };
    expect(why(garbage, policy, T0)).toMatch(/^unreadable certificate or key/);
    const otherCa = generateCA('someone-else', {
      now: new Date(T0),
      validityMs: policy.caValidityMs,
    });
    const foreign = {
      ...first,
      data: {
        ...first.data,
        [SECRET_KEYS.caCert]: otherCa.certPem,
        [SECRET_KEYS.caKey]: otherCa.keyPem,
      },
    };
    expect(why(foreign, policy, T0)).toBe('the signing CA is not in ca.crt');
  });

  it('reissues the serving certificate from the same CA before it expires', () => {
    const r = step(first, T0 + 201 * S);
    expect(r.action).toBe('reissue');
    expect(r.secret.data[SECRET_KEYS.caCert]).toBe(first.data[SECRET_KEYS.caCert]);
    expect(r.secret.data[SECRET_KEYS.cert]).not.toBe(first.data[SECRET_KEYS.cert]);
    expect(
      verifies(first.data[SECRET_KEYS.caCert] as string, r.secret.data[SECRET_KEYS.cert] as string),
    ).toBe(true);
  });

  it('rotates the CA in two steps: trusted first, signing only after the promotion delay, old CA kept until it expires', () => {
    let s = first;
    const oldCa = first.data[SECRET_KEYS.caCert] as string;
    // Keep the serving certificate fresh until the CA itself needs replacing.
    s = step(s, T0 + 201 * S).secret;
    s = step(s, T0 + 402 * S).secret;
    let r = step(s, T0 + 601 * S);
    expect(r.action).toBe('add-next-ca');
    s = r.secret;
    const nextCa = s.data[SECRET_KEYS.nextCert] as string;
    expect(bundleSubjects(s)).toEqual([cert(oldCa).serialNumber, cert(nextCa).serialNumber]);
    expect(s.data[SECRET_KEYS.caCert]).toBe(oldCa);
    expect(s.annotations[NEXT_CA_SINCE_ANNOTATION]).toBe(new Date(T0 + 601 * S).toISOString());

    // Within the promotion delay nothing signs with the new CA.
    r = step(s, T0 + 630 * S);
    expect(r.action).not.toBe('promote-ca');
    s = r.secret;
    r = step(s, T0 + 662 * S);
    expect(r.action).toBe('promote-ca');
    s = r.secret;
    expect(s.data[SECRET_KEYS.caCert]).toBe(nextCa);
    expect(s.data[SECRET_KEYS.nextCert]).toBeUndefined();
    expect(s.annotations[NEXT_CA_SINCE_ANNOTATION]).toBeUndefined();
    expect(verifies(nextCa, s.data[SECRET_KEYS.cert] as string)).toBe(true);
    // Both CAs stay trusted while the old one lives; API servers may still hold old certificates.
    expect(bundleSubjects(s)).toHaveLength(2);
    expect(why(s, policy, T0 + 700 * S)).toBeUndefined();

    r = step(s, T0 + 870 * S);
    expect(r.action).toBe('reissue');
    r = step(r.secret, T0 + 901 * S);
    expect(r.action).toBe('prune-bundle');
    expect(bundleSubjects(r.secret)).toEqual([cert(nextCa).serialNumber]);
  });

  it('never issues a serving certificate that outlives its CA', () => {
    const shortCa: RotationPolicy = { ...policy, caValidityMs: 100 * S };
    const s = advance(undefined, assess(undefined, shortCa, T0), shortCa, T0);
    const leaf = cert(s.data[SECRET_KEYS.cert] as string);
    const ca = cert(s.data[SECRET_KEYS.caCert] as string);
    expect(leaf.validity.notAfter.getTime()).toBeLessThanOrEqual(ca.validity.notAfter.getTime());
  });
});
