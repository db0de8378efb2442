// A steady stream of annotated pod creations, as dry runs (the API server calls the webhook for
// them exactly as for real pods, and nothing is scheduled): run inside the cluster's netns by the
// in-cluster suite during a webhook rollout. Counts pods that came back without our mutation
// (with failurePolicy: Ignore a missed webhook call admits the pod unmutated).
// Usage: node admission-load.mjs URL TOKEN CA_FILE NAMESPACE RATE STOP_FILE
// Prints one JSON line: {"sent","mutated","missed","failed","seconds"}; stops when STOP_FILE exists.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { paced } from './paced.mjs';

const [url, token, caFile, namespace, rateArg, stopFile] = process.argv.slice(2);
const rate = Number(rateArg);
const ca = readFileSync(caFile);
const agent = new Agent({ keepAlive: true, ca });
const target = new URL(`/api/v1/namespaces/${namespace}/pods?dryRun=All`, url);
const counts = { sent: 0, mutated: 0, missed: 0, failed: 0, missedNames: [] };
const started = Date.now();

function createPod(i) {
  const body = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `load-${i}`, annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' } },
    spec: {
      automountServiceAccountToken: false,
      containers: [{ name: 'app', image: 'erdma-smcr.test/app:1' }],
    },
  });
  return new Promise((resolve) => {
    const req = request(
      target,
      {
        method: 'POST',
        agent,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (data += c));
        res.on('end', () => {
          if (res.statusCode !== 201) counts.failed += 1;
          else if (JSON.parse(data).metadata?.annotations?.['smcr.erdma.io/settings'])
            counts.mutated += 1;
          else {
            counts.missed += 1;
            counts.missedNames.push(`load-${i}`);
          }
          resolve();
        });
      },
    );
    req.on('error', () => {
      counts.failed += 1;
      resolve();
    });
    req.end(body);
  });
}

await paced(rate, stopFile, (i) => {
  counts.sent += 1;
  return createPod(i);
});
agent.destroy();
console.log(JSON.stringify({ ...counts, seconds: (Date.now() - started) / 1000 }));
