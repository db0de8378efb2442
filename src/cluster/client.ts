// The Kubernetes API for our long-running processes: JSON requests and watch streams over
// HTTPS, with the credentials of a kubeconfig or a service account (./kubeconfig.ts chooses
// them as kubectl does).
//
// Why not @kubernetes/client-node here: its KubeConfig imports the library's whole generated API
// (every model and API class, ~55 MB of JavaScript, about 80 MB resident), and the webhook needs
// a handful of paths (#25). Kubeconfig users that need a credential plugin (`exec`) or a legacy
// `auth-provider`, and clusters behind a `proxy-url`, still get client-node's KubeConfig, loaded
// only then (./kubeconfig.ts), which applies their credentials to every request.
import { request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { named } from '../errors.js';

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
named(ApiError, 'ApiError');

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
export type Credentials = (opts: RequestOptions) => Promise<void>;

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
      // One JSON event per line. Split here rather than with node:readline, which a process
      // otherwise never loads (#43: 0.9 MB resident on Node 26); setEncoding keeps a character
      // cut between two chunks whole.
      let rest = '';
      let failed = false;
      const event = (line: string): void => {
        if (failed || line.trim() === '') return;
        try {
          onEvent(JSON.parse(line) as WatchEvent);
        } catch (err) {
          failed = true;
          reject(err instanceof Error ? err : new Error(String(err)));
          abort();
        }
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (!chunk.includes('\n')) {
          rest += chunk;
          return;
        }
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) event(line);
      });
      res.on('end', () => {
        event(rest);
        resolve();
      });
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

/** HTTP status of a failed API call (ApiError, like client-node's ApiException, carries `code`). */
export function apiStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** A short, log-safe description of a failed API call. */
export function apiReason(err: unknown): string {
  const status = apiStatus(err);
  const body = (err as { body?: unknown }).body;
  let message = (err as Error).message;
  if (typeof body === 'string') {
    try {
      message = (JSON.parse(body) as { message?: string }).message ?? message;
    } catch {
      // not a Status object
    }
  }
  return status !== undefined ? `HTTP ${status}: ${message.split('\n')[0]}` : message;
}
