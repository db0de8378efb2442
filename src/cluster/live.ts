// The live cluster view: informers on the nodes and on the ConfigMap holding the cluster profile
// (driver mode, IP families: the same ClusterProfile document `erdma-smcr check --profile` reads).
// Ready after the first sync of both; a broken watch keeps the last good view and says so.
import type { V1ConfigMap, V1Node } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterView, NodeFacts } from '../policy/types.js';
import { parseYamlFirst } from '../yaml.js';
import { parseProfile, viewFromProfile, type Profile } from './profile.js';
import { WatchedSet } from './kube.js';
import type { KubeClient } from './client.js';
import { nodeFacts, type ClusterViewSource } from './view.js';

/** Key of the ConfigMap entry holding the ClusterProfile YAML. */
export const PROFILE_KEY = 'profile.yaml';

export interface LiveViewOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  /** ConfigMap in `namespace` whose `profile.yaml` overrides `baseProfile`; absent is fine. */
  readonly configMap: string;
  /** Profile used when the ConfigMap is absent (the embedded default or --profile). */
  readonly baseProfile: Profile;
  readonly logger: Logger;
  /** Told whenever the view goes stale (watch broken) or fresh again. */
  readonly onStale?: (stale: boolean) => void;
  readonly backoffMs?: { readonly initial: number; readonly max: number };
}

export class LiveViewSource implements ClusterViewSource {
  private readonly nodes: WatchedSet<V1Node>;
  private readonly maps: WatchedSet<V1ConfigMap>;
  private view: ClusterView;
  private profile: Profile;
  private readonly stale = new Set<string>();

  constructor(private readonly opts: LiveViewOptions) {
    this.profile = opts.baseProfile;
    this.view = viewFromProfile(opts.baseProfile);
    const common = { logger: opts.logger, onChange: () => this.rebuild(), ...(opts.backoffMs ? { backoffMs: opts.backoffMs } : {}) };
    this.nodes = new WatchedSet<V1Node>(opts.client, {
      ...common,
      path: '/api/v1/nodes',
      onStale: (s) => this.setStale('nodes', s),
    });
    this.maps = new WatchedSet<V1ConfigMap>(opts.client, {
      ...common,
      path: `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/configmaps`,
      fieldSelector: `metadata.name=${opts.configMap}`,
      onStale: (s) => this.setStale('configmap', s),
    });
  }

  /** Starts both informers; resolves once both listed (true) or after `timeoutMs` (false, keeps trying). */
  async start(timeoutMs?: number): Promise<boolean> {
    const [a, b] = await Promise.all([this.nodes.start(timeoutMs), this.maps.start(timeoutMs)]);
    return a && b;
  }

  get synced(): boolean {
    return this.nodes.synced && this.maps.synced;
  }

  /** Whether some watch is broken and the view is the last good one. */
  get isStale(): boolean {
    return this.stale.size > 0;
  }

  current(): ClusterView {
    return this.view;
  }

  private setStale(what: string, stale: boolean): void {
    const before = this.stale.size > 0;
    if (stale) this.stale.add(what);
    else this.stale.delete(what);
    const after = this.stale.size > 0;
    if (before !== after) {
      this.opts.onStale?.(after);
      if (!after) this.opts.logger.info('cluster view fresh again');
    }
  }

  private profileFromConfigMap(): Profile {
    const cm = this.maps.get(this.opts.configMap, this.opts.namespace);
    const text = cm?.data?.[PROFILE_KEY];
    if (text === undefined) return this.opts.baseProfile;
    const source = `configmap ${this.opts.namespace}/${this.opts.configMap} ${PROFILE_KEY}`;
    try {
      return parseProfile(parseYamlFirst(text, source), source);
    } catch (err) {
      // A bad edit must not take the cluster settings away: keep what we had.
      this.opts.logger.error({ reason: (err as Error).message }, 'cluster profile ConfigMap is invalid; keeping the previous profile');
      return this.profile;
    }
  }

  private rebuild(): void {
    this.profile = this.profileFromConfigMap();
    const nodes: NodeFacts[] = [];
    for (const n of this.nodes.objects()) {
      const f = nodeFacts(n);
      if (f) nodes.push(f);
    }
    // Nodes are known only once listed; before that node checks only warn.
    this.view = viewFromProfile({ ...this.profile, nodes: undefined }, this.nodes.synced ? nodes : undefined);
  }

  async close(): Promise<void> {
    await Promise.all([this.nodes.close(), this.maps.close()]);
  }
}
