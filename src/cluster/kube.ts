// The narrow door to the Kubernetes API: kubeconfig loading the standard way, status helpers, and
// a watched set of objects (client-node's ListWatch) that restarts itself with backoff and says
// when it is stale.
import { KubeConfig, ListWatch, Watch, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';

/**
 * Kubeconfig chosen the way kubectl and client-go choose it: an explicit file, else $KUBECONFIG,
 * else ~/.kube/config, else the in-cluster service account.
 */
export function loadKubeConfig(file?: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
  } catch (err) {
    throw new AppError('KUBE_UNAVAILABLE', `cannot load kubeconfig${file ? ` ${file}` : ''}: ${(err as Error).message}`);
  }
  if (!kc.getCurrentCluster()) {
    throw new AppError('KUBE_UNAVAILABLE', 'no Kubernetes cluster configured: pass --kubeconfig, set KUBECONFIG, or run in a pod');
  }
  return kc;
}

/** HTTP status of a failed API call (client-node's ApiException carries `code`). */
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

export interface WatchedSetOptions<T extends KubernetesObject> {
  /** API path of the collection, e.g. /api/v1/nodes. */
  readonly path: string;
  readonly list: () => Promise<KubernetesListObject<T>>;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly logger: Logger;
  /** Called after every change (and after each successful (re)list). */
  readonly onChange: () => void;
  /** Called with true when the watch breaks and false once it is healthy again. */
  readonly onStale?: (stale: boolean) => void;
  readonly backoffMs?: { readonly initial: number; readonly max: number };
}

/**
 * A ListWatch kept alive: client-node stops a ListWatch on any error other than 410 Gone; this
 * restarts it (a fresh list, then watch) with exponential backoff and keeps the last good objects
 * meanwhile.
 */
export class WatchedSet<T extends KubernetesObject> {
  private readonly lw: ListWatch<T>;
  private listed = false;
  private broke = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private delay: number;
  private firstSync: Promise<void>;
  private resolveFirst!: () => void;

  constructor(kc: KubeConfig, private readonly opts: WatchedSetOptions<T>) {
    this.delay = opts.backoffMs?.initial ?? 500;
    this.firstSync = new Promise((r) => (this.resolveFirst = r));
    const list = async (): Promise<KubernetesListObject<T>> => {
      const result = await opts.list();
      this.listed = true;
      this.broke = false;
      this.delay = opts.backoffMs?.initial ?? 500;
      opts.onStale?.(false);
      this.resolveFirst();
      queueMicrotask(opts.onChange);
      return result;
    };
    this.lw = new ListWatch<T>(opts.path, new Watch(kc), list, false, opts.labelSelector, opts.fieldSelector);
    for (const verb of ['add', 'update', 'delete'] as const) this.lw.on(verb, () => opts.onChange());
    this.lw.on('error', (err: unknown) => this.broken(err));
  }

  /** Starts listing and watching; resolves after the first successful list or `timeoutMs`. */
  async start(timeoutMs = 10_000): Promise<boolean> {
    void this.lw.start().catch((err: unknown) => this.broken(err));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.firstSync, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    return this.listed;
  }

  get synced(): boolean {
    return this.listed;
  }

  /** Listed, and the watch has not broken since the last list: the objects are current. */
  get fresh(): boolean {
    return this.listed && !this.broke;
  }

  objects(): readonly T[] {
    return this.lw.list();
  }

  get(name: string, namespace?: string): T | undefined {
    return this.lw.get(name, namespace);
  }

  private broken(err: unknown): void {
    if (this.closed) return;
    this.broke = true;
    this.opts.onStale?.(true);
    this.opts.logger.warn({ path: this.opts.path, reason: apiReason(err), retryInMs: this.delay }, 'watch broken; serving the last good state');
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.closed) void this.lw.start().catch((e: unknown) => this.broken(e));
    }, this.delay);
    this.delay = Math.min(this.delay * 2, this.opts.backoffMs?.max ?? 30_000);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.lw.stop();
  }
}
