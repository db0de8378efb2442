// The live cluster view: informers on the nodes, on the ConfigMap holding the cluster profile
// (driver mode, IP families: the same ClusterProfile document `erdma-smcr check --profile` reads)
// and on the ServiceCIDR objects (networking.k8s.io/v1, GA in 1.33: the Service ranges the SMC
// selection takes in, #100). Ready after the first sync of the nodes and the profile, and of the
// ServiceCIDRs unless they cannot be listed (an API server without them, or RBAC from an older
// install: said in the log, and the selection goes on without them); a broken watch keeps the last
// good view and says so.
//
// Sized for large clusters: each Node is cut down on arrival to the facts the policy reads (name,
// labels, kernel, OS image; strings shared through a pool), lists come in pages, and each watch
// event changes one entry of the node index (src/policy/nodes.ts) instead of rebuilding the view.
// A kubelet's status update, the most common event, changes none of the facts: the node's entry
// stays as it was.
import type { V1ConfigMap, V1Node } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { NodeIndex } from '../policy/nodes.js';
import type { ClusterView, NodeFacts } from '../policy/types.js';
import { parseYamlFirst } from '../util/yaml.js';
import { canonicalCidr } from '../policy/selection.js';
import { parseProfile, viewFromProfile, type Profile } from './profile.js';
import { WatchedSet, type SetChange } from './watch.js';
import type { KubeClient } from './client.js';
import { nodeFacts, sameFacts, StringPool, type ClusterViewSource } from './view.js';

/** The ServiceCIDR collection (networking.k8s.io/v1). */
const SERVICE_CIDRS = '/apis/networking.k8s.io/v1/servicecidrs';

/** What the view reads of a ServiceCIDR: its ranges (one per IP family). */
interface ServiceCIDR {
  metadata?: { name?: string; resourceVersion?: string };
  spec?: { cidrs?: string[] };
}

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

/**
 * Nodes per list page. client-go pages by 500, but an ACK Node is about 12 KB of JSON and a page is
 * decoded whole before it is cut down to facts: at 100 a page holds about 1.2 MB of text, and the
 * webhook's peak while listing 5,000 nodes stays near its idle size (`npm run bench scale`).
 */
const NODE_PAGE_SIZE = 100;

export class LiveViewSource implements ClusterViewSource {
  private readonly nodes: WatchedSet<V1Node, NodeFacts>;
  private readonly maps: WatchedSet<V1ConfigMap>;
  private readonly serviceCidrs: WatchedSet<ServiceCIDR, readonly string[]>;
  /** The ServiceCIDRs could not be listed before the first sync: readiness does not wait on them. */
  private serviceCidrsUnlisted = false;
  private readonly index = new NodeIndex();
  private readonly pool = new StringPool();
  private view: ClusterView;
  private profile: Profile;
  private readonly stale = new Set<string>();

  constructor(private readonly opts: LiveViewOptions) {
    this.profile = opts.baseProfile;
    this.view = viewFromProfile(opts.baseProfile);
    const backoff = opts.backoffMs ? { backoffMs: opts.backoffMs } : {};
    this.nodes = new WatchedSet<V1Node, NodeFacts>(opts.client, {
      logger: opts.logger,
      ...backoff,
      path: '/api/v1/nodes',
      pageSize: NODE_PAGE_SIZE,
      transform: (n) => this.factsOf(n),
      onChange: (change) => this.nodeChanged(change),
      onStale: (s) => this.setStale('nodes', s),
    });
    this.maps = new WatchedSet<V1ConfigMap>(opts.client, {
      logger: opts.logger,
      ...backoff,
      path: `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/configmaps`,
      fieldSelector: `metadata.name=${opts.configMap}`,
      onChange: () => this.rebuild(),
      onStale: (s) => this.setStale('configmap', s),
    });
    this.serviceCidrs = new WatchedSet<ServiceCIDR, readonly string[]>(opts.client, {
      logger: opts.logger,
      ...backoff,
      path: SERVICE_CIDRS,
      transform: (s) => (s.spec?.cidrs ?? []).flatMap((c) => canonicalCidr(c) ?? []),
      onChange: () => this.rebuild(),
      onStale: (s) => {
        // Never listed (an API server before 1.33, or RBAC from an older install): said once, and
        // not a stale view, which would page someone for good; a watch that breaks later is.
        if (s && !this.serviceCidrs.synced) {
          if (!this.serviceCidrsUnlisted)
            opts.logger.warn(
              { path: SERVICE_CIDRS },
              'cannot list ServiceCIDRs (an API server before 1.33, or the webhook lacks list/watch on servicecidrs.networking.k8s.io): the SMC selection takes in the Service ranges once they can be listed, or as the cluster profile names them (serviceNetworks)',
            );
          this.serviceCidrsUnlisted = true;
          return;
        }
        this.setStale('servicecidrs', s);
      },
    });
  }

  /** The node's facts; the entry already known when they did not change (a status update). */
  private factsOf(node: V1Node): NodeFacts | undefined {
    const facts = nodeFacts(node, this.pool);
    if (!facts) return undefined;
    const known = this.index.get(facts.name);
    return known && sameFacts(known, facts) ? known : facts;
  }

  private nodeChanged(change: SetChange<NodeFacts>): void {
    if (change === undefined) {
      // A (re)list: the index is made anew from the set.
      this.index.clear();
      for (const f of this.nodes.values()) this.index.upsert(f);
      this.rebuild();
      return;
    }
    const name = change.key.slice(change.key.indexOf('/') + 1);
    if (change.kept === undefined) this.index.remove(name);
    else this.index.upsert(change.kept);
  }

  /** Starts both informers; resolves once both listed (true) or after `timeoutMs` (false, keeps trying). */
  async start(timeoutMs?: number): Promise<boolean> {
    const [a, b, c] = await Promise.all([
      this.nodes.start(timeoutMs),
      this.maps.start(timeoutMs),
      this.serviceCidrs.start(timeoutMs),
    ]);
    return a && b && (c || this.serviceCidrsUnlisted);
  }

  get synced(): boolean {
    return (
      this.nodes.synced &&
      this.maps.synced &&
      (this.serviceCidrs.synced || this.serviceCidrsUnlisted)
    );
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
      this.opts.logger.error(
        { reason: (err as Error).message },
        'cluster profile ConfigMap is invalid; keeping the previous profile',
      );
      return this.profile;
    }
  }

  /** The view object anew (profile or sync state changed); the node index is shared, not copied. */
  private rebuild(): void {
    this.profile = this.profileFromConfigMap();
    // Nodes are known only once listed; before that node checks only warn.
    const services = [...new Set([...this.serviceCidrs.values()].flat())].sort();
    this.view = viewFromProfile(
      { ...this.profile, nodes: undefined },
      this.nodes.synced ? this.index : undefined,
      services,
    );
  }

  async close(): Promise<void> {
    await Promise.all([this.nodes.close(), this.maps.close(), this.serviceCidrs.close()]);
  }
}
