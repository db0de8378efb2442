// What a watched set says when its API server fails: before a first list there is no "last good
// state" to serve, and the log must not claim one (#70). The client is a stand-in whose every
// request fails as a connection refused does; the cluster suite watches a real API server.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { KubeClient } from '../../../src/cluster/client.js';
import { WatchedSet } from '../../../src/cluster/watch.js';

function logged(): { lines: Record<string, unknown>[]; logger: pino.Logger } {
  const lines: Record<string, unknown>[] = [];
  return {
    lines,
    logger: pino({ level: 'warn' }, { write: (l: string) => void lines.push(JSON.parse(l)) }),
  };
}

describe('a watched set whose API server never answers', () => {
  it('says it cannot list yet, not that it serves a last good state', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), {
      code: 'ECONNREFUSED',
    });
    const client = {
      request: () => Promise.reject(refused),
      watch: () => Promise.reject(refused),
    } as unknown as KubeClient;
    const { lines, logger } = logged();
    const set = new WatchedSet(client, {
      path: '/api/v1/nodes',
      logger,
      onChange: () => undefined,
      backoffMs: { initial: 60_000, max: 60_000 },
    });
    expect(await set.start(200)).toBe(false);
    await set.close();
    expect(lines.map((l) => l.msg)).toEqual([
      'cannot list yet; nothing known of it until the API server answers',
    ]);
    expect(JSON.stringify(lines)).not.toMatch(/last good state/);
  });
});
