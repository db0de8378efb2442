// A floor for the webhook benchmark: fastify with our transport options (HTTP/2 with HTTP/1.1
// fallback over TLS), its default JSON body parser, and a fixed response. What any fastify-based
// webhook costs before doing any work. Its TLS is ours too (TLS_POLICY: TLS 1.2+, AEAD suites,
// server cipher order), as #25's target asks, and so is TCP_NODELAY (src/admission/https-server.ts).
// Prints its port on stdout.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { TLS_POLICY } from '../dist/admission/transport.js';

const [keyPath, certPath] = process.argv.slice(2);
const app = Fastify({
  logger: false,
  http2: true,
  https: {
    allowHTTP1: true,
    key: readFileSync(keyPath),
    cert: readFileSync(certPath),
    ...TLS_POLICY,
    noDelay: true,
  },
  // The timeouts src/admission/https-server.ts sets.
  http2SessionTimeout: 120_000,
  keepAliveTimeout: 65_000,
  requestTimeout: 30_000,
});
const response = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  response: { uid: '00000000-0000-0000-0000-000000000000', allowed: true },
});
app.post('/mutate', async (_req, reply) => reply.type('application/json').send(response));
await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`port ${app.server.address().port}`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
