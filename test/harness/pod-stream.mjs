// A steady stream of real pods that ask for SMC-R (and so, through the webhook, for one
// aliyun/erdma device), each running a second and never restarted: run inside the
// cluster's netns by the in-cluster suite while the agent is updated, killed and restarted. The
// suite then reads what became of every pod; this only creates them.
// Usage: node pod-stream.mjs URL TOKEN CA_FILE NAMESPACE RATE STOP_FILE IMAGE
// Prints one JSON line: {"sent","created","failed","errors","seconds"}; stops when STOP_FILE exists.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { paced } from './paced.mjs';

const [url, token, caFile, namespace, rateArg, stopFile, image] = process.argv.slice(2);
const rate = Number(rateArg);
const agent = new Agent({ keepAlive: true, ca: readFileSync(caFile) });
const target = new URL(`/api/v1/namespaces/${namespace}/pods`, url);
const counts = { sent: 0, created: 0, failed: 0, errors: [] };
const started = Date.now();

function createPod(i) {
  const body = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `stream-${i}`,
      labels: { stream: 'agent-lifecycle' },
      annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
    },
    spec: {
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image, imagePullPolicy: 'Never', command: ['/bin/sleep', '1'] }],
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
          if (res.statusCode === 201) counts.created += 1;
          else {
            counts.failed += 1;
            if (counts.errors.length < 10)
              counts.errors.push(`${res.statusCode} ${data.slice(0, 300)}`);
          }
          resolve();
        });
      },
    );
    req.on('error', (err) => {
      counts.failed += 1;
      if (counts.errors.length < 10) counts.errors.push(err.message);
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
