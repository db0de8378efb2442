// Which cluster, with which user: the kubeconfig chosen as kubectl and client-go choose it (an
// explicit file, $KUBECONFIG merged, ~/.kube/config), else the pod's service account.
import { existsSync, readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import jsyaml from 'js-yaml';
import { AppError } from '../errors.js';
import { KubeClient, type Credentials } from './client.js';

export type { KubeClient } from './client.js';

/** Where a pod's service account credentials are mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Bound service account tokens rotate; client-go re-reads the file at most once a minute. */
const TOKEN_REREAD_MS = 60_000;

interface NamedCluster {
  server?: string;
  'certificate-authority'?: string;
  'certificate-authority-data'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'tls-server-name'?: string;
  'proxy-url'?: string;
}

interface NamedUser {
  token?: string;
  tokenFile?: string;
  'client-certificate'?: string;
  'client-certificate-data'?: string;
  'client-key'?: string;
  'client-key-data'?: string;
  username?: string;
  password?: string;
  exec?: unknown;
  'auth-provider'?: unknown;
  as?: string;
}

interface Merged {
  /** The file each entry came from: relative paths in it are relative to that file. */
  clusters: Map<string, { entry: NamedCluster; dir: string }>;
  users: Map<string, { entry: NamedUser; dir: string }>;
  contexts: Map<string, { cluster?: string; user?: string; namespace?: string }>;
  currentContext?: string;
  files: string[];
}

function unavailable(message: string, cause?: unknown): AppError {
  return new AppError('KUBE_UNAVAILABLE', message, cause === undefined ? undefined : { cause });
}

function namedList(
  v: unknown,
  key: string,
  file: string,
): { name: string; value: Record<string, unknown> }[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw unavailable(`kubeconfig ${file}: ${key} must be a list`);
  return v.flatMap((item: unknown) => {
    const o = item as Record<string, unknown> | null;
    const inner = o?.[key.slice(0, -1)];
    return typeof o?.name === 'string' && typeof inner === 'object' && inner !== null
      ? [{ name: o.name, value: inner as Record<string, unknown> }]
      : [];
  });
}

/** Merges kubeconfig files as kubectl does: the first file to set a name (or current-context) wins. */
function readKubeconfigs(files: readonly string[]): Merged {
  const merged: Merged = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    files: [...files],
  };
  for (const file of files) {
    let doc: Record<string, unknown>;
    try {
      doc = (jsyaml.load(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
    } catch (err) {
      throw unavailable(`cannot load kubeconfig ${file}: ${(err as Error).message}`, err);
    }
    const dir = dirname(file);
    for (const c of namedList(doc.clusters, 'clusters', file))
      if (!merged.clusters.has(c.name))
        merged.clusters.set(c.name, { entry: c.value as NamedCluster, dir });
    for (const u of namedList(doc.users, 'users', file))
      if (!merged.users.has(u.name)) merged.users.set(u.name, { entry: u.value as NamedUser, dir });
    for (const c of namedList(doc.contexts, 'contexts', file))
      if (!merged.contexts.has(c.name))
        merged.contexts.set(
          c.name,
          c.value as { cluster?: string; user?: string; namespace?: string },
        );
    if (
      merged.currentContext === undefined &&
      typeof doc['current-context'] === 'string' &&
      doc['current-context'] !== ''
    )
      merged.currentContext = doc['current-context'];
  }
  return merged;
}

const resolvePath = (dir: string, p: string): string => (isAbsolute(p) ? p : join(dir, p));

function fileOrData(
  dir: string,
  file: string | undefined,
  data: string | undefined,
): Buffer | undefined {
  if (data) return Buffer.from(data, 'base64');
  return file ? readFileSync(resolvePath(dir, file)) : undefined;
}

/** A token read from a file, re-read at most once a minute (rotated service account tokens). */
function tokenFromFile(path: string): () => string {
  let token = '';
  let readAt = 0;
  return () => {
    if (Date.now() - readAt >= TOKEN_REREAD_MS || token === '') {
      token = readFileSync(path, 'utf8').trim();
      readAt = Date.now();
    }
    return token;
  };
}

function staticCredentials(agent: Agent, user: NamedUser, dir: string): Credentials {
  const token = user.token
    ? () => user.token as string
    : user.tokenFile
      ? tokenFromFile(resolvePath(dir, user.tokenFile))
      : undefined;
  const basic =
    user.username !== undefined
      ? `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`
      : undefined;
  return async (opts) => {
    opts.agent = agent;
    const headers = (opts.headers ??= {}) as Record<string, string>;
    if (token) headers.authorization = `Bearer ${token()}`;
    else if (basic) headers.authorization = basic;
    if (user.as) headers['impersonate-user'] = user.as;
  };
}

/** Credentials applied by client-node's KubeConfig: exec plugins, auth providers, proxies. */
async function clientNodeCredentials(
  files: readonly string[],
  context: string,
): Promise<Credentials> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(files[0] as string);
  for (const f of files.slice(1)) {
    const more = new KubeConfig();
    more.loadFromFile(f);
    kc.mergeConfig(more, true);
  }
  kc.setCurrentContext(context);
  return async (opts) => {
    await kc.applyToHTTPSOptions(opts);
  };
}

function kubeconfigFiles(file: string | undefined, env: Env): string[] {
  if (file) return [file];
  const list = env.KUBECONFIG;
  if (list) return list.split(delimiter).filter((f) => f !== '' && existsSync(f));
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  return existsSync(home) ? [home] : [];
}

/** The current context's cluster and user, or an error naming what is missing. */
function currentEntries(
  m: Merged,
  where: string,
): {
  name: string;
  namespace?: string;
  cluster: { entry: NamedCluster; dir: string };
  user: { entry: NamedUser; dir: string };
} {
  const name = m.currentContext;
  const context = name === undefined ? undefined : m.contexts.get(name);
  if (name === undefined || !context)
    throw unavailable(
      `kubeconfig ${where}: ${name === undefined ? 'no current-context' : `context ${name} is not defined`}`,
    );
  const cluster = context.cluster === undefined ? undefined : m.clusters.get(context.cluster);
  if (!cluster?.entry.server)
    throw unavailable(`kubeconfig ${where}: context ${name} has no cluster with a server`);
  const user = (context.user === undefined ? undefined : m.users.get(context.user)) ?? {
    entry: {},
    dir: cluster.dir,
  };
  return { name, ...(context.namespace ? { namespace: context.namespace } : {}), cluster, user };
}

async function fromKubeconfig(files: readonly string[]): Promise<KubeClient> {
  const where = files.join(delimiter);
  const { name, namespace, cluster, user } = currentEntries(readKubeconfigs(files), where);
  const c = cluster.entry;
  const server = new URL(c.server as string);
  if (server.protocol !== 'https:')
    throw unavailable(`kubeconfig ${where}: server ${c.server} is not https`);
  if (
    user.entry.exec !== undefined ||
    user.entry['auth-provider'] !== undefined ||
    c['proxy-url'] !== undefined
  ) {
    return new KubeClient(server, await clientNodeCredentials(files, name), namespace);
  }
  try {
    const agent = new Agent({
      keepAlive: true,
      ca: fileOrData(cluster.dir, c['certificate-authority'], c['certificate-authority-data']),
      cert: fileOrData(
        user.dir,
        user.entry['client-certificate'],
        user.entry['client-certificate-data'],
      ),
      key: fileOrData(user.dir, user.entry['client-key'], user.entry['client-key-data']),
      rejectUnauthorized: c['insecure-skip-tls-verify'] !== true,
      ...(c['tls-server-name'] ? { servername: c['tls-server-name'] } : {}),
    });
    return new KubeClient(server, staticCredentials(agent, user.entry, user.dir), namespace);
  } catch (err) {
    throw unavailable(`kubeconfig ${where}: ${(err as Error).message}`, err);
  }
}

function inCluster(env: Env, dir = SERVICE_ACCOUNT_DIR): KubeClient | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port || !existsSync(join(dir, 'token'))) return undefined;
  const server = new URL(`https://${isIPv6(host) ? `[${host}]` : host}:${port}`);
  const agent = new Agent({
    keepAlive: true,
    ca: existsSync(join(dir, 'ca.crt')) ? readFileSync(join(dir, 'ca.crt')) : undefined,
  });
  const namespace = existsSync(join(dir, 'namespace'))
    ? readFileSync(join(dir, 'namespace'), 'utf8').trim()
    : undefined;
  return new KubeClient(
    server,
    staticCredentials(agent, { tokenFile: join(dir, 'token') }, dir),
    namespace,
  );
}

/** The environment variables the choice reads: KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST and _PORT. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * The cluster to talk to, chosen as kubectl and client-go choose it: an explicit file, else
 * $KUBECONFIG (a list, merged), else ~/.kube/config, else the pod's service account.
 */
export async function loadKubeClient(
  file: string | undefined,
  env: Env,
  serviceAccountDir = SERVICE_ACCOUNT_DIR,
): Promise<KubeClient> {
  if (file !== undefined && !existsSync(file))
    throw unavailable(`cannot load kubeconfig ${file}: no such file`);
  const files = kubeconfigFiles(file, env);
  if (files.length > 0) return fromKubeconfig(files);
  const pod = inCluster(env, serviceAccountDir);
  if (pod) return pod;
  throw unavailable(
    'no Kubernetes cluster configured: pass --kubeconfig, set KUBECONFIG, or run in a pod',
  );
}
