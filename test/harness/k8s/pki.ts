// Client certificates for the test cluster (kubelet identity, apiserver → kubelet), signed by the
// cluster CA the control-plane harness makes. node-forge, as in src/certs.
import forge from 'node-forge';
import type { KeyPairPem } from '../../../src/certs/pki.js';

/** A TLS client certificate with subject CN=`cn`, O=`orgs` (Kubernetes reads user and groups from them). */
export function clientCert(
  ca: KeyPairPem,
  cn: string,
  orgs: readonly string[],
  days = 2,
): KeyPairPem {
  const keys = forge.pki.rsa.generateKeyPair({ bits: 2048 });
  const cert = forge.pki.createCertificate();
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  cert.publicKey = keys.publicKey;
  cert.serialNumber = forge.util.bytesToHex(forge.random.getBytesSync(16)).replace(/^[89a-f]/, '1');
  cert.validity.notBefore = new Date(Date.now() - 5 * 60_000);
  cert.validity.notAfter = new Date(Date.now() + days * 86_400_000);
  cert.setSubject([
    { name: 'commonName', value: cn },
    ...orgs.map((o) => ({ name: 'organizationName', value: o })),
  ]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', clientAuth: true },
  ]);
  cert.sign(
    forge.pki.privateKeyFromPem(ca.keyPem) as forge.pki.rsa.PrivateKey,
    forge.md.sha256.create(),
  );
  return {
    certPem: forge.pki.certificateToPem(cert),
    keyPem: forge.pki.privateKeyToPem(keys.privateKey),
  };
}
