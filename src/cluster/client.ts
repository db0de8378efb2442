// A small Kubernetes REST client for the long-running processes: the kubeconfig chosen as
// kubectl chooses it (or the in-cluster service account), JSON requests, and watch streams.
//
// Why not @kubernetes/client-node here: its KubeConfig imports the library's whole generated API
// (every model and API class, ~55 MB of JavaScript, about 80 MB resident), and the webhook needs
// a handful of paths (#25). Kubeconfig users that need a credential plugin (`exec`) or a legacy
// `auth-provider`, and clusters behind a `proxy-url`, still get client-node's KubeConfig, loaded
// only then, which applies their credentials to every request.
import { existsSync, readFileSync } from 'node:fs';
import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { createInterface } from 'node:readline';
import jsyaml from 'js-yaml';
import { AppError } from '../errors.js';

/** Where a pod's service account credentials are mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Bound service account tokens rotate; client-go re-reads the file at most once a minute. */
const TOKEN_REREAD_MS = 60_000;
/** A request (not a watch) that has not answered by then has failed. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Longest error body kept from a failed request. */
const MAX_ERROR_BODY = 64 * 1024;

/** A failed API call: `code` is the HTTP status and `body` the response text, as client-node's ApiException has them. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly body: string,
    method: string,
    path: string,
  ) {
    super(`${method} ${path}: HTTP ${code}`);
    this.name = 'ApiError';
  }
}

/** One event of a watch stream. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: Record<string, unknown>;
}

/** A watch in progress: `done` settles when the stream ends (resolves) or fails (rejects). */
export interface WatchHandle {
  readonly done: Promise<void>;
  abort(): void;
}

/** Adds credentials to a request's options (headers, client certificate, agent). */
type Credentials = (opts: RequestOptions) => Promise<void>;

export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/** The Kubernetes API of one cluster, with one user's credentials. */
export class KubeClient {
  constructor(
    readonly server: URL,
    private readonly credentials: Credentials,
    /** The kubeconfig context's (or the pod's) namespace, when it names one. */
    readonly namespace?: string,
  ) {}

  private url(path: string, query?: Query): URL {
    const url = new URL(
      path.replace(/^\/+/, ''),
      this.server.href.endsWith('/') ? this.server.href : `${this.server.href}/`,
    );
    for (const [k, v] of Object.entries(query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  private async open(
    method: string,
    path: string,
    query: Query | undefined,
    body: string | undefined,
    contentType: string,
    timeoutMs: number,
  ): Promise<{ res: IncomingMessage; abort: () => void }> {
    const opts: RequestOptions = { method, headers: { accept: 'application/json' } };
    await this.credentials(opts);
    const headers: Record<string, string | number> = {
      ...(opts.headers as Record<string, string>),
    };
    if (body !== undefined) {
      headers['content-type'] = contentType;
      headers['content-length'] = Buffer.byteLength(body);
    }
    return new Promise((resolve, reject) => {
      const req = request(this.url(path, query), { ...opts, headers, timeout: timeoutMs }, (res) =>
        resolve({ res, abort: () => req.destroy() }),
      );
      req.on('timeout', () =>
        req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs / 1000} s`)),
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** One JSON request; resolves with the decoded body, rejects with ApiError for a non-2xx answer. */
  async request<T = Record<string, unknown>>(
    method: string,
    path: string,
    opts: { query?: Query; body?: unknown; contentType?: string } = {},
  ): Promise<T> {
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const { res } = await this.open(
      method,
      path,
      opts.query,
      body,
      opts.contentType ?? 'application/json',
      REQUEST_TIMEOUT_MS,
    );
    const text = await readText(
      res,
      res.statusCode !== undefined && res.statusCode < 300 ? Infinity : MAX_ERROR_BODY,
    );
    if (res.statusCode === undefined || res.statusCode >= 300)
      throw new ApiError(res.statusCode ?? 0, text, method, path);
    return (text === '' ? {} : JSON.parse(text)) as T;
  }

  /** GET of one object; undefined when it does not exist. */
  async get<T = Record<string, unknown>>(path: string): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', path);
    } catch (err) {
      if (err instanceof ApiError && err.code === 404) return undefined;
      throw err;
    }
  }

  /**
   * Watches a collection from `resourceVersion`: calls `onEvent` for each event until the server
   * ends the stream (`done` resolves) or it fails (`done` rejects, with ApiError for a non-2xx).
   */
  async watch(path: string, query: Query, onEvent: (e: WatchEvent) => void): Promise<WatchHandle> {
    const { res, abort } = await this.open('GET', path, { ...query, watch: 1 }, undefined, '', 0);
    if (res.statusCode === undefined || res.statusCode >= 300) {
      const text = await readText(res, MAX_ERROR_BODY);
      throw new ApiError(res.statusCode ?? 0, text, 'GET', `${path}?watch=1`);
    }
    const done = new Promise<void>((resolve, reject) => {
      const lines = createInterface({ input: res, crlfDelay: Infinity });
      lines.on('line', (line) => {
        if (line.trim() === '') return;
        try {
          onEvent(JSON.parse(line) as WatchEvent);
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
          abort();
        }
      });
      lines.on('close', () => resolve());
      lines.on('error', reject); // readline re-emits the stream's errors (a reset connection)
      res.on('error', reject);
      res.on('aborted', () => reject(new Error(`watch of ${path} aborted`)));
    });
    return { done, abort };
  }
}

function readText(res: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= limit) chunks.push(c);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

// ---- Choosing and reading the kubeconfig ----

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
