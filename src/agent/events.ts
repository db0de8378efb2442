// Kubernetes Events from the agent, and the memory of what it already told: the agent says each
// thing once (per pod and reason, per Node and situation), and again only when it changes or, for
// what is sampled (connections falling back), once a window has passed.
import type { CoreV1Event } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClient } from '../cluster/client.js';
import { apiReason } from '../cluster/client.js';
import type { Clock } from './duty.js';
import type { AgentMetrics } from './metrics.js';
import type { NodePod } from './pod.js';

/** What an Event says. */
export interface EventText {
  readonly reason: string;
  readonly message: string;
  readonly type: 'Normal' | 'Warning';
}

/** Where Events go: the API server in the agent, a list in tests. */
export interface EventSink {
  /** Posts an Event; false when it could not be (it was logged; the caller tells again later). */
  pod(pod: NodePod, what: EventText): Promise<boolean>;
  node(what: EventText): Promise<boolean>;
}

/**
 * What was told, by key (a pod's UID, a device), so each thing is said once: `due` answers whether
 * `value` is news for `key` (a different value, or the same one after `windowMs`), and `told`
 * records it once it was said.
 */
export class Told<V = string> {
  private readonly said = new Map<string, { value: V; at: number }>();
  /** Counts the changes to what is kept, for a caller that saves it only when it changed. */
  private changes = 0;

  constructor(
    private readonly clock: Pick<Clock, 'now'>,
    private readonly windowMs = Infinity,
  ) {}

  due(key: string, value: V): boolean {
    const last = this.said.get(key);
    return !last || last.value !== value || this.clock.now() - last.at >= this.windowMs;
  }

  told(key: string, value: V): void {
    this.said.set(key, { value, at: this.clock.now() });
    this.changes++;
  }

  /** Forgets every key `keep` says no to (pods that left the node). */
  forgetExcept(keep: (key: string) => boolean): void {
    for (const key of [...this.said.keys()])
      if (!keep(key)) {
        this.said.delete(key);
        this.changes++;
      }
  }

  /** What was told, by key (to be kept across restarts). */
  values(): Record<string, V> {
    return Object.fromEntries([...this.said].map(([k, v]) => [k, v.value]));
  }

  /** Takes what an earlier process told as told now. */
  restore(values: Record<string, V>): void {
    for (const [k, v] of Object.entries(values))
      this.said.set(k, { value: v, at: this.clock.now() });
  }

  /** Changes so far (told, forgotten); restoring is not one. */
  get version(): number {
    return this.changes;
  }

  get size(): number {
    return this.said.size;
  }
}

/** Events posted through the API server, from `erdma-smcr-agent` on this node. */
export class ApiEventSink implements EventSink {
  constructor(
    private readonly client: KubeClient,
    private readonly nodeName: string,
    private readonly metrics: AgentMetrics,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly logger: Logger,
  ) {}

  async pod(pod: NodePod, what: EventText): Promise<boolean> {
    const md = pod.metadata ?? {};
    const namespace = md.namespace ?? 'default';
    return this.post(
      namespace,
      { generateName: `${md.name}.`, namespace },
      { apiVersion: 'v1', kind: 'Pod', name: md.name, namespace, uid: md.uid },
      what,
      `${namespace}/${md.name}`,
    );
  }

  async node(what: EventText): Promise<boolean> {
    const node = this.nodeName;
    return this.post(
      'default',
      { generateName: `${node}.` },
      { apiVersion: 'v1', kind: 'Node', name: node, uid: node },
      what,
      `node ${node}`,
    );
  }

  private async post(
    namespace: string,
    metadata: CoreV1Event['metadata'],
    involvedObject: CoreV1Event['involvedObject'],
    what: EventText,
    about: string,
  ): Promise<boolean> {
    const now = new Date(this.clock.now());
    const body: CoreV1Event = {
      metadata,
      involvedObject,
      reason: what.reason,
      type: what.type,
      message: what.message.slice(0, 1000),
      source: { component: 'erdma-smcr-agent', host: this.nodeName },
      reportingComponent: 'erdma-smcr-agent',
      reportingInstance: this.nodeName,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    try {
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`;
      await this.client.request('POST', path, { body });
      this.metrics.events.inc({ reason: what.reason });
      this.logger.info({ about, reason: what.reason }, what.message);
      return true;
    } catch (err) {
      this.logger.warn(
        { about, event: what.reason, reason: apiReason(err) },
        'cannot post an Event; will retry',
      );
      return false;
    }
  }
}

/** No API server (or no node name): nothing is told, and the duties say so in their problems. */
export const NO_EVENTS: EventSink = {
  pod: async () => false,
  node: async () => false,
};
