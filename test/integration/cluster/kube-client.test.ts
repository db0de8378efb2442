// The webhook's and the agent's own Kubernetes client (src/cluster/client.ts) against the real
// kube-apiserver (1.37, built from the Go module proxy): each way of choosing and authenticating
// that kubectl knows and the client claims, the watch protocol, and errors that say what to fix.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, type KubeClient, type WatchEvent } from '../../../src/cluster/client.js';
import { loadKubeClient } from '../../../src/cluster/kubeconfig.js';
import { WatchedSet } from '../../../src/cluster/watch.js';
import { isAppError } from '../../../src/errors.js';
import { pino } from 'pino';
import { until } from '../../helpers/wait.js';
import {
  ensureBinaries,
  startControlPlane,
  type ControlPlane,
} from '../../harness/k8s/control-plane.js';
import { requires } from '../../helpers/requires.js';

const why = requires('the Kubernetes client suite', ensureBinaries);

interface NodeList {
  kind: string;
  metadata: { resourceVersion: string };
  items: unknown[];
}

function kubeconfig(
  server: string,
  user: Record<string, unknown>,
  cluster: Record<string, unknown>,
  context = 'test',
): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': context,
    clusters: [{ name: 'c', cluster: { server, ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'test', context: { cluster: 'c', user: 'u', namespace: 'team-a' } }],
  });
}

async function failure(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (err) {
    if (isAppError(err)) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected a failure');
}

describe.skipIf(why !== '')('Kubernetes client (real kube-apiserver)', () => {
  let cp: ControlPlane;
  let dir: string;
  const caData = (): string => Buffer.from(cp.caPem).toString('base64');
  const write = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };
  const listNodes = (c: KubeClient): Promise<NodeList> =>
    c.request<NodeList>('GET', '/api/v1/nodes');

  beforeAll(async () => {
    // Pod templates (which nothing else here uses) skip the API server's watch cache: their
    // watches read etcd itself, so compacting etcd makes an old version Gone (410) at once.
    cp = await startControlPlane({ apiserverArgs: ['--watch-cache-sizes=podtemplates#0'] });
    dir = mkdtempSync(join(tmpdir(), 'kube-client-'));
  }, 120_000);

  afterAll(async () => {
    await cp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a token and an inline CA: lists, and reports the context namespace', async () => {
    const c = await loadKubeClient(
      write(
        'token.yaml',
        kubeconfig(cp.url, { token: cp.token }, { 'certificate-authority-data': caData() }),
      ),
      {},
    );
    expect((await listNodes(c)).kind).toBe('NodeList');
    expect(c.namespace).toBe('team-a');
  });

  it('a client certificate and a CA as files, relative to the kubeconfig', async () => {
    const sub = join(dir, 'certs');
    mkdirSync(sub, { recursive: true });
    copyFileSync(join(cp.dir, 'kubelet-client.crt'), join(sub, 'client.crt'));
    copyFileSync(join(cp.dir, 'kubelet-client.key'), join(sub, 'client.key'));
    copyFileSync(join(cp.dir, 'ca.crt'), join(sub, 'ca.crt'));
    const file = join(sub, 'cert.yaml');
    writeFileSync(
      file,
      kubeconfig(
        cp.url,
        { 'client-certificate': 'client.crt', 'client-key': 'client.key' },
        { 'certificate-authority': 'ca.crt' },
      ),
    );
    expect((await listNodes(await loadKubeClient(file, {}))).kind).toBe('NodeList');
  });

  it('KUBECONFIG holding several files: the first to name the current context wins', async () => {
    const bad = write(
      'bad.yaml',
      kubeconfig(cp.url, { token: 'wrong' }, { 'certificate-authority-data': caData() }, 'test'),
    );
    const good = write(
      'good.yaml',
      kubeconfig(cp.url, { token: cp.token }, { 'certificate-authority-data': caData() }, 'test'),
    );
    // Both define cluster "c", user "u" and context "test": kubectl takes the first file's.
    const first = await loadKubeClient(undefined, { KUBECONFIG: `${good}:${bad}` });
    expect((await listNodes(first)).kind).toBe('NodeList');
    const wrong = await loadKubeClient(undefined, { KUBECONFIG: `${bad}:${good}` });
    await expect(listNodes(wrong)).rejects.toMatchObject({ code: 401 });
  });

  it('a credential plugin (exec): credentials come from client-node, loaded only for it', async () => {
    const plugin = write(
      'plugin.sh',
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"${cp.token}"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const exec = { apiVersion: 'client.authentication.k8s.io/v1beta1', command: plugin };
    const c = await loadKubeClient(
      write('exec.yaml', kubeconfig(cp.url, { exec }, { 'certificate-authority-data': caData() })),
      {},
    );
    expect((await listNodes(c)).kind).toBe('NodeList');
  });

  it('in a pod: the service account token, CA and namespace, and the service host and port', async () => {
    const sa = join(dir, 'serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), `${cp.token}\n`);
    writeFileSync(join(sa, 'ca.crt'), cp.caPem);
    writeFileSync(join(sa, 'namespace'), 'erdma-smcr');
    const url = new URL(cp.url);
    const env = {
      KUBERNETES_SERVICE_HOST: url.hostname,
      KUBERNETES_SERVICE_PORT: url.port,
      HOME: dir,
    };
    const c = await loadKubeClient(undefined, env, sa);
    expect((await listNodes(c)).kind).toBe('NodeList');
    expect(c.namespace).toBe('erdma-smcr');
  });

  it('answers an API error with its status and the server message, and get() of a missing object with undefined', async () => {
    const c = await loadKubeClient(cp.kubeconfig, {});
    expect(await c.get('/api/v1/namespaces/default/secrets/nope')).toBeUndefined();
    const err = await c
      .request('GET', '/api/v1/namespaces/default/secrets/nope')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(404);
    expect(JSON.parse((err as ApiError).body)).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
    });
    const created = await c.request<{ metadata: { resourceVersion: string } }>(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      { body: { metadata: { name: 'c1' }, data: { a: '1' } } },
    );
    const conflict = await c
      .request('POST', '/api/v1/namespaces/default/configmaps', {
        body: { metadata: { name: 'c1' } },
      })
      .catch((e: unknown) => e);
    expect((conflict as ApiError).code).toBe(409);
    const patched = await c.request<{ data: Record<string, string> }>(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/c1',
      { body: { data: { b: '2' } }, contentType: 'application/merge-patch+json' },
    );
    expect(patched.data).toEqual({ a: '1', b: '2' });
    const stale = await c
      .request('PUT', '/api/v1/namespaces/default/configmaps/c1', {
        body: {
          metadata: { name: 'c1', resourceVersion: created.metadata.resourceVersion },
          data: {},
        },
      })
      .catch((e: unknown) => e);
    expect((stale as ApiError).code).toBe(409);
  });

  it('watches from a version: the events after it, in order, until the server ends the watch', async () => {
    const c = await loadKubeClient(cp.kubeconfig, {});
    const list = await c.request<NodeList>('GET', '/api/v1/namespaces/default/configmaps');
    const events: WatchEvent[] = [];
    const w = await c.watch(
      '/api/v1/namespaces/default/configmaps',
      { resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 5 },
      (e) => events.push(e),
    );
    await c.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: { metadata: { name: 'w1' } },
    });
    await c.request('DELETE', '/api/v1/namespaces/default/configmaps/w1');
    await w.done; // the server ends it after timeoutSeconds
    expect(events.map((e) => `${e.type} ${(e.object.metadata as { name: string }).name}`)).toEqual([
      'ADDED w1',
      'DELETED w1',
    ]);
  });

  it('a watch on a connection gone silent (API server stopped, SIGSTOP) goes stale past its deadline, and recovers', async () => {
    const c = await loadKubeClient(cp.kubeconfig, {});
    let stale = false;
    const set = new WatchedSet(c, {
      path: '/api/v1/namespaces',
      logger: pino({ level: 'silent' }),
      onChange: () => {},
      onStale: (s) => (stale = s),
      backoffMs: { initial: 200, max: 1000 },
      watchSeconds: { timeout: 2, grace: 1 },
    });
    const pid = execFileSync(
      'pgrep',
      ['-f', `kube-apiserver.*--secure-port=${new URL(cp.url).port}`],
      { encoding: 'utf8' },
    )
      .trim()
      .split('\n')[0] as string;
    try {
      expect(await set.start()).toBe(true);
      await new Promise((r) => setTimeout(r, 500)); // the watch is open
      process.kill(Number(pid), 'SIGSTOP');
      await until('the set to go stale on the silent connection', () => stale || undefined, 15_000);
      expect(set.fresh).toBe(false);
      process.kill(Number(pid), 'SIGCONT');
      await until('the set to list again', () => set.fresh || undefined, 30_000);
    } finally {
      process.kill(Number(pid), 'SIGCONT');
      await set.close();
    }
  });

  it('a watch resumed from a version etcd has compacted away gets 410 Gone: the set lists again, without going stale', async () => {
    const c = await loadKubeClient(cp.kubeconfig, {});
    const ns = '/api/v1/namespaces/gone/podtemplates';
    await c.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'gone' } } });
    const template = (name: string): object => ({
      metadata: { name },
      template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    });
    // What the set asks and hears, seen from outside it: its lists, and the watch events it gets.
    const lists: string[] = [];
    const errors: unknown[] = [];
    const spy = Object.create(c) as KubeClient;
    spy.request = (method, path, opts) => {
      if (method === 'GET' && path === ns) lists.push(path);
      return c.request(method, path, opts);
    };
    spy.watch = (path, query, onEvent) =>
      c.watch(path, query, (e) => {
        if (e.type === 'ERROR') errors.push(e.object);
        onEvent(e);
      });
    const staleness: boolean[] = [];
    const set = new WatchedSet(spy, {
      path: ns,
      logger: pino({ level: 'silent' }),
      onChange: () => {},
      onStale: (s) => staleness.push(s),
      backoffMs: { initial: 200, max: 1000 },
      watchSeconds: { timeout: 1, grace: 5 },
    });
    const names = (): string[] =>
      set
        .objects()
        .map((o) => o.metadata?.name ?? '')
        .sort();
    try {
      expect(await set.start()).toBe(true);
      await c.request('POST', ns, { body: template('a') });
      await until('the set to see a', () => names().includes('a') || undefined, 10_000);
      // Writes elsewhere move etcd's revision past a's; compacting there makes a's version (the
      // one the next watch resumes from: nothing else in the namespace changes) too old.
      await c.request('POST', '/api/v1/namespaces/default/podtemplates', {
        body: template('elsewhere-1'),
      });
      const { metadata } = await c.request<{ metadata: { resourceVersion: string } }>(
        'POST',
        '/api/v1/namespaces/default/podtemplates',
        { body: template('elsewhere-2') },
      );
      const compacted = await fetch(`${cp.etcdUrl}/v3/kv/compaction`, {
        method: 'POST',
        body: JSON.stringify({ revision: metadata.resourceVersion, physical: true }),
      });
      expect(compacted.status).toBe(200);
      await until('the watch to be told 410 Gone', () => errors.length > 0 || undefined, 15_000);
      expect(errors[0]).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
      await until('the set to list again', () => lists.length >= 2 || undefined, 10_000);
      // The set watches again from the new list: a change after it arrives.
      await c.request('POST', ns, { body: template('b') });
      await until('the set to see b', () => names().includes('b') || undefined, 10_000);
      expect(names()).toEqual(['a', 'b']);
      expect(staleness).not.toContain(true); // 410 is the protocol at work, not a failure
      expect(set.fresh).toBe(true);
    } finally {
      await set.close();
    }
  }, 60_000);

  it('says what to fix when nothing usable is configured', async () => {
    expect(await failure(loadKubeClient(join(dir, 'missing.yaml'), {}))).toMatchObject({
      code: 'KUBE_UNAVAILABLE',
      message: expect.stringContaining('no such file'),
    });
    const noContext = write(
      'nocontext.yaml',
      JSON.stringify({ clusters: [], users: [], contexts: [] }),
    );
    expect((await failure(loadKubeClient(noContext, {}))).message).toContain('no current-context');
    const plain = write('http.yaml', kubeconfig('http://127.0.0.1:1', { token: 'x' }, {}));
    expect((await failure(loadKubeClient(plain, {}))).message).toContain('is not https');
    const home = join(dir, 'empty-home');
    mkdirSync(home, { recursive: true });
    const none = await failure(
      loadKubeClient(undefined, { HOME: home }, join(dir, 'no-serviceaccount')),
    );
    expect(none.message).toBe(
      'no Kubernetes cluster configured: pass --kubeconfig, set KUBECONFIG, or run in a pod',
    );
  });
});
