// Keeps this node's smcr.erdma.io/* labels equal to what the agent found; never touches others.
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { NODE_LABELS } from '../constants.js';

const OURS = new Set<string>(Object.values(NODE_LABELS));

export class NodeLabeler {
  private readonly core: CoreV1Api;
  constructor(kc: KubeConfig, private readonly nodeName: string, private readonly logger: Logger) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** Applies `want` (null removes a label); returns the keys changed (none when already right). */
  async apply(want: Readonly<Record<string, string | null>>): Promise<string[]> {
    for (const k of Object.keys(want)) if (!OURS.has(k)) throw new Error(`refusing to manage label ${k}: not ours`);
    const node = await this.core.readNode({ name: this.nodeName });
    const have = node.metadata?.labels ?? {};
    const patch: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(want)) {
      if (v === null ? k in have : have[k] !== v) patch[k] = v;
    }
    const changed = Object.keys(patch);
    if (changed.length === 0) return changed;
    // A JSON merge patch of just our keys: labels someone else sets in between are kept.
    await this.core.patchNode({ name: this.nodeName, body: { metadata: { labels: patch } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    this.logger.info({ node: this.nodeName, labels: patch }, 'node labels updated');
    return changed;
  }
}
