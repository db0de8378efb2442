// A watched set of objects (list in pages, then watch from its resourceVersion) that restarts
// itself with backoff and says when it is stale: the informer of our processes.
import type { Logger } from 'pino';
import { ApiError, apiReason, apiStatus, type KubeClient, type WatchHandle } from './client.js';

/** What a watched object has: metadata with a name, maybe a namespace and a resourceVersion. */
export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** What changed in a watched set: one object (kept form, or gone), or the whole set after a list. */
export type SetChange<S> = { readonly key: string; readonly kept: S | undefined } | undefined;

export interface WatchedSetOptions<T, S = T> {
  /** API path of the collection, e.g. /api/v1/nodes. */
  readonly path: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly logger: Logger;
  /**
   * What is kept of each object as it arrives (default: the object itself), so a large object the
   * consumer reads a few fields of is not held; undefined keeps nothing of it.
   */
  readonly transform?: (obj: T) => S | undefined;
  /**
   * Called after every change: with the key and what is now kept (undefined when it is gone) for
   * one watch event, and with no argument after each successful (re)list.
   */
  readonly onChange: (change: SetChange<S>) => void;
  /** Called with true when the watch breaks and false once it is healthy again. */
  readonly onStale?: (stale: boolean) => void;
  readonly backoffMs?: { readonly initial: number; readonly max: number };
  /** Seconds each watch asks the server to end it after (spread up to twice that), and the grace past it before it is taken for dead. */
  readonly watchSeconds?: { readonly timeout: number; readonly grace: number };
  /** Objects per list page (`limit`, then `continue`), as client-go's reflector pages its lists. */
  readonly pageSize?: number;
}

/** The server ends a watch after this long plus up to as much again (spread, as client-go does). */
const WATCH_SECONDS = 300;
/** How long past its timeoutSeconds a watch may stay open before it is taken for dead. */
const WATCH_GRACE_SECONDS = 30;

const keyOf = (o: KubeObject): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** client-go's reflector lists in pages of 500. */
const PAGE_SIZE = 500;

interface ListPage<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/**
 * A collection listed (in pages), then watched from the list's resourceVersion; a watch the server
 * ends is resumed from the last version seen (bookmarks included), and a 410 Gone lists again. Any
 * other failure marks the set stale, keeps the last good objects, and starts over (a fresh list,
 * then watch) with exponential backoff. Each object is kept in the form `transform` makes of it.
 */
export class WatchedSet<T extends KubeObject, S = T> {
  private items = new Map<string, S>();
  private listed = false;
  private broke = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private delay: number;
  private firstSync: Promise<void>;
  private resolveFirst!: () => void;
  private current: WatchHandle | undefined;
  /** Each start (and restart after a failure) is a new generation; older cycles stop. */
  private generation = 0;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: WatchedSetOptions<T, S>,
  ) {
    this.delay = opts.backoffMs?.initial ?? 500;
    this.firstSync = new Promise((r) => (this.resolveFirst = r));
  }

  /** Starts listing and watching; resolves after the first successful list or `timeoutMs`. */
  async start(timeoutMs = 10_000): Promise<boolean> {
    this.run();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.firstSync, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    return this.listed;
  }

  private selectors(): Record<string, string | undefined> {
    return { labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector };
  }

  private run(): void {
    const generation = ++this.generation;
    void this.cycle(generation).catch((err: unknown) => {
      if (generation === this.generation) this.broken(err);
    });
  }

  private async cycle(generation: number): Promise<void> {
    const current = (): boolean => !this.closed && generation === this.generation;
    while (current()) {
      let version = await this.list();
      // Resumes each watch the server ends from the last version seen; a 410 Gone lists again.
      for (let gone = false; !gone && current();) {
        const watched = await this.watchOnce(version);
        version = watched.version;
        gone = watched.gone;
      }
    }
  }

  private keep(obj: T): S | undefined {
    return this.opts.transform ? this.opts.transform(obj) : (obj as unknown as S);
  }

  private keepAll(list: readonly T[], into: Map<string, S>): void {
    for (const item of list) {
      const kept = this.keep(item);
      if (kept !== undefined) into.set(keyOf(item), kept);
    }
  }

  /** One page of the list; undefined when the continue token expired (410). */
  private async page(limit: number, token: string | undefined): Promise<ListPage<T> | undefined> {
    try {
      const query = { ...this.selectors(), limit, continue: token };
      return await this.client.request<ListPage<T>>('GET', this.opts.path, { query });
    } catch (err) {
      if (token === undefined || apiStatus(err) !== 410) throw err;
      this.opts.logger.info({ path: this.opts.path }, 'list continue token expired; listing again');
      return undefined;
    }
  }

  /**
   * Lists the collection in pages into a new set, which replaces the old one once whole (a failed
   * list keeps the last good objects); returns the list's resourceVersion. A continue token that
   * expired (410) lists again from the start, as client-go's pager does.
   */
  private async list(): Promise<string> {
    const limit = this.opts.pageSize ?? PAGE_SIZE;
    const items = new Map<string, S>();
    let version = '';
    let token: string | undefined;
    for (let more = true; more;) {
      const page = await this.page(limit, token);
      if (this.closed) return '';
      if (!page) {
        items.clear();
        token = undefined;
        continue;
      }
      if (token === undefined) version = page.metadata?.resourceVersion ?? '';
      this.keepAll(page.items ?? [], items);
      token = page.metadata?.continue || undefined;
      more = token !== undefined;
    }
    this.items = items;
    this.listed = true;
    this.broke = false;
    this.delay = this.opts.backoffMs?.initial ?? 500;
    this.opts.onStale?.(false);
    this.resolveFirst();
    this.opts.onChange(undefined);
    return version;
  }

  /** One watch from `version`, applied to the set until the server ends it. */
  private async watchOnce(version: string): Promise<{ version: string; gone: boolean }> {
    let last = version;
    let gone = false;
    const { timeout, grace } = this.opts.watchSeconds ?? {
      timeout: WATCH_SECONDS,
      grace: WATCH_GRACE_SECONDS,
    };
    const query = {
      ...this.selectors(),
      resourceVersion: version,
      allowWatchBookmarks: true,
      timeoutSeconds: timeout + Math.floor(Math.random() * timeout),
    };
    this.current = await this.client.watch(this.opts.path, query, (e) => {
      const code = (e.object as { code?: number }).code;
      if (e.type === 'ERROR') {
        if (code !== 410)
          throw new ApiError(
            Number(code ?? 0),
            JSON.stringify(e.object),
            'GET',
            `${this.opts.path}?watch=1`,
          );
        gone = true;
        return;
      }
      const obj = e.object as T;
      last = obj.metadata?.resourceVersion ?? last;
      if (e.type === 'BOOKMARK') return;
      const key = keyOf(obj);
      const kept = e.type === 'DELETED' ? undefined : this.keep(obj);
      if (kept === undefined) this.items.delete(key);
      else this.items.set(key, kept);
      this.opts.onChange({ key, kept });
    });
    if (this.closed) this.current.abort();
    // The server ends the watch at timeoutSeconds; past that (and a margin) the connection is
    // dead without having said so: drop it, and the set goes stale and starts over.
    const watched = this.current;
    const deadline = setTimeout(() => watched.abort(), (query.timeoutSeconds + grace) * 1000);
    deadline.unref();
    try {
      await watched.done;
    } finally {
      clearTimeout(deadline);
    }
    return { version: last, gone };
  }

  get synced(): boolean {
    return this.listed;
  }

  /** Listed, and the watch has not broken since the last list: the objects are current. */
  get fresh(): boolean {
    return this.listed && !this.broke;
  }

  objects(): readonly S[] {
    return [...this.items.values()];
  }

  /** Every kept object, without copying the set. */
  values(): IterableIterator<S> {
    return this.items.values();
  }

  get(name: string, namespace?: string): S | undefined {
    return this.items.get(`${namespace ?? ''}/${name}`);
  }

  private broken(err: unknown): void {
    if (this.closed) return;
    this.broke = true;
    this.opts.onStale?.(true);
    // Before a first list there is no good state to serve: say what is (#70).
    this.opts.logger.warn(
      { path: this.opts.path, reason: apiReason(err), retryInMs: this.delay },
      this.listed
        ? 'watch broken; serving the last good state'
        : 'cannot list yet; nothing known of it until the API server answers',
    );
    this.current?.abort();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.closed) this.run();
    }, this.delay);
    this.delay = Math.min(this.delay * 2, this.opts.backoffMs?.max ?? 30_000);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.generation++;
    clearTimeout(this.timer);
    this.current?.abort();
  }
}
