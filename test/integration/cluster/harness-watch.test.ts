// The control-plane harness watches every component for the life of the control plane: one that
// dies after start (a port clash once killed the scheduler, and a CI run hung with every pod
// Pending) fails the next call at once, naming it and quoting its log, and polling stops too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureBinaries,
  startControlPlane,
  type ControlPlane,
} from '../../harness/k8s/control-plane.js';
import { requires } from '../../helpers/requires.js';
import { until } from '../../helpers/wait.js';

const why = requires('the control-plane harness suite', ensureBinaries);

describe.skipIf(why !== '')('the control-plane harness', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane({ scheduler: true });
  }, 120_000);
  afterAll(async () => {
    await cp?.stop();
  });

  it('fails every call at once, with the log, when a component dies after start', async () => {
    expect((await cp.kubectl(['get', 'namespaces'])).status).toBe(0);
    const pid = cp.pid('kube-scheduler');
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, 'SIGKILL');
    await until('the scheduler gone', () => {
      try {
        process.kill(pid!, 0);
        return false;
      } catch {
        return true;
      }
    });
    await new Promise((r) => setTimeout(r, 200)); // the exit event
    await expect(cp.kubectl(['get', 'namespaces'])).rejects.toThrow(
      /kube-scheduler exited \(SIGKILL\) while the control plane was in use; .*kube-scheduler\.log/,
    );
    // A poll that retries errors gives up at once instead of waiting out its timeout.
    const started = Date.now();
    await expect(
      until('pods scheduled', () => cp.kubectl(['get', 'pods']).then(() => false), {
        timeoutMs: 60_000,
        retryErrors: true,
      }),
    ).rejects.toThrow(/kube-scheduler exited/);
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 60_000);
});
