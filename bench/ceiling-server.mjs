// The ceiling for the webhook benchmark: a bare node:https server with the same certificate that
// reads the body and returns a fixed valid AdmissionReview response. With `--parse` it also
// JSON.parses the body (the least any real webhook must do). Prints its port on stdout.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';

const [keyPath, certPath, flag] = process.argv.slice(2);
const parse = flag === '--parse';
const response = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  response: { uid: '00000000-0000-0000-0000-000000000000', allowed: true },
});
const server = createServer(
  { key: readFileSync(keyPath), cert: readFileSync(certPath), minVersion: 'TLSv1.2' },
  (req, res) => {
    const chunks = [];
    req.on('data', (c) => parse && chunks.push(c));
    req.on('end', () => {
      if (parse) JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(response),
      });
      res.end(response);
    });
  },
);
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => console.log(`port ${server.address().port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
