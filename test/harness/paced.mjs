// Fires `fire(i)` `rate` times a second until `stopFile` exists, then waits for the calls still
// running: the pacing of the in-cluster suite's load scripts (admission-load.mjs, pod-stream.mjs).
import { existsSync } from 'node:fs';

export async function paced(rate, stopFile, fire) {
  const inflight = new Set();
  let i = 0;
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      if (existsSync(stopFile)) {
        clearInterval(timer);
        resolve();
        return;
      }
      const p = fire(i++).then(() => inflight.delete(p));
      inflight.add(p);
    }, 1000 / rate);
  });
  await Promise.all(inflight);
}
