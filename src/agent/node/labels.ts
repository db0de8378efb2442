// Keeps this node's smcr.erdma.io/* labels (and its own annotations) equal to what the agent
// found; never touches others.
import type { V1Node } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClient } from '../../cluster/client.js';
import { NODE_ANNOTATIONS, NODE_LABELS } from '../../constants.js';

const OURS = new Set<string>(Object.values(NODE_LABELS));
const OUR_ANNOTATIONS = new Set<string>(Object.values(NODE_ANNOTATIONS));

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
  apply(want: Readonly<Record<string, string | null>>): Promise<string[]> {
    return this.merge('labels', OURS, want);
  }

  /** The same for our annotations (NODE_ANNOTATIONS). */
  annotate(want: Readonly<Record<string, string | null>>): Promise<string[]> {
    return this.merge('annotations', OUR_ANNOTATIONS, want);
  }

  private async merge(
    field: 'labels' | 'annotations',
    ours: ReadonlySet<string>,
    want: Readonly<Record<string, string | null>>,
  ): Promise<string[]> {
    const what = field === 'labels' ? 'label' : 'annotation';
    for (const k of Object.keys(want))
      if (!ours.has(k)) throw new Error(`refusing to manage ${what} ${k}: not ours`);
    const node = await this.client.request<V1Node>('GET', this.path);
    const have = node.metadata?.[field] ?? {};
    const patch: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(want)) {
      if (v === null ? k in have : have[k] !== v) patch[k] = v;
    }
    const changed = Object.keys(patch);
    if (changed.length === 0) return changed;
    // A JSON merge patch of just our keys: others someone sets in between are kept.
    await this.client.request('PATCH', this.path, {
      body: { metadata: { [field]: patch } },
      contentType: 'application/merge-patch+json',
    });
    this.logger.info({ node: this.nodeName, [field]: patch }, `node ${field} updated`);
    return changed;
  }
}
