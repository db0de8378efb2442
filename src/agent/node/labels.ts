// Keeps this node's smcr.erdma.io/* labels equal to what the agent found; never touches others.
import type { V1Node } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClient } from '../../cluster/client.js';
import { NODE_LABELS } from '../../constants.js';

const OURS = new Set<string>(Object.values(NODE_LABELS));

export class NodeLabeler {
  private readonly path: string;
  constructor(
    private readonly client: KubeClient,
    readonly nodeName: string,
    private readonly logger: Logger,
  ) {
    this.path = `/api/v1/nodes/${encodeURIComponent(nodeName)}`;
  }

  /** Applies `want` (null removes a label); returns the keys changed (none when already right). */
  async apply(want: Readonly<Record<string, string | null>>): Promise<string[]> {
    for (const k of Object.keys(want))
      if (!OURS.has(k)) throw new Error(`refusing to manage label ${k}: not ours`);
    const node = await this.client.request<V1Node>('GET', this.path);
    const have = node.metadata?.labels ?? {};
    const patch: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(want)) {
      if (v === null ? k in have : have[k] !== v) patch[k] = v;
    }
    const changed = Object.keys(patch);
    if (changed.length === 0) return changed;
    // A JSON merge patch of just our keys: labels someone else sets in between are kept.
    await this.client.request('PATCH', this.path, {
      body: { metadata: { labels: patch } },
      contentType: 'application/merge-patch+json',
    });
    this.logger.info({ node: this.nodeName, labels: patch }, 'node labels updated');
    return changed;
  }
}
