// How a watch reads its stream (src/cluster/client.ts): one JSON event per line, however the
// server's writes cut the lines and the characters in them. A real TLS server on loopback writes
// the bytes; the cluster suite watches a real API server.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLocalCerts } from '../../../src/certs/local.js';
import { KubeClient, type WatchEvent } from '../../../src/cluster/client.js';

let dir: string;
let server: Server;
let client: KubeClient;
/** What the server writes for the next watch: each element one write, a turn of the loop between. */
let writes: Buffer[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'watch-stream-'));
  const { paths } = ensureLocalCerts({ dir, service: 'api', namespace: 'test' });
  const ca = readFileSync(paths.caCert, 'utf8');
  server = createServer(
    { key: readFileSync(paths.key), cert: readFileSync(paths.cert) },
    (_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const mine = writes;
      const next = (i: number): void => {
        const chunk = mine[i];
        if (chunk === undefined) return void res.end();
        res.write(chunk);
        setImmediate(() => next(i + 1));
      };
      next(0);
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  client = new KubeClient(new URL(`https://127.0.0.1:${port}`), async (opts) => {
    opts.ca = ca;
  });
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

async function watchAll(): Promise<WatchEvent[]> {
  const events: WatchEvent[] = [];
  const w = await client.watch('/api/v1/pods', {}, (e) => events.push(e));
  await w.done;
  return events;
}

const ev = (name: string): WatchEvent => ({ type: 'ADDED', object: { metadata: { name } } });

describe('a watch stream', () => {
  it('gives each event once, in order, however the writes cut lines and characters', async () => {
    // Names with characters of 2, 3 and 4 bytes, so that some writes end inside one.
    const sent = ['café', '节点-α', '🚀-pod', 'plain', 'x'.repeat(70_000)].map(ev);
    const bytes = Buffer.from(sent.map((e) => `${JSON.stringify(e)}\n`).join('\r\n'));
    for (const size of [1, 3, 7, 1000, bytes.length]) {
      // Cut in pieces of `size` over the first 3,000 bytes (four events), then in 16 KiB.
      writes = [];
      for (let i = 0; i < bytes.length; i += i < 3000 ? size : 16_384)
        writes.push(bytes.subarray(i, i + (i < 3000 ? size : 16_384)));
      expect(await watchAll(), `writes of ${size} bytes`).toEqual(sent);
    }
  });

  it('gives the last event when the stream ends without a newline', async () => {
    writes = [Buffer.from(`${JSON.stringify(ev('a'))}\n${JSON.stringify(ev('b'))}`)];
    expect(await watchAll()).toEqual([ev('a'), ev('b')]);
  });

  it('fails on a line that is not JSON, after the events before it, and stops there', async () => {
    writes = [
      Buffer.from(`${JSON.stringify(ev('a'))}\n{"type":"ADDED",\n${JSON.stringify(ev('b'))}\n`),
    ];
    const events: WatchEvent[] = [];
    const w = await client.watch('/api/v1/pods', {}, (e) => events.push(e));
    await expect(w.done).rejects.toThrow(SyntaxError);
    expect(events).toEqual([ev('a')]);
  });
});
