// The DRA driver's claim state (src/dra/claims.ts), without gRPC: a claim is read from the
// API once and then answered from the checkpoint (also by a restarted driver, which writes a lost
// CDI spec again); a claim whose UID is no longer the one the kubelet named was replaced and is
// refused; a device not on this node is refused naming what the node has; one claim asked for
// twice at once is prepared once; unpreparing removes the spec and the entry. The API here is an
// in-memory map behind KubeClient's `get` (the unit tier has no API server; the DRA suite runs
// the same code against a real one).
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { KubeClient } from '../../../src/cluster/client.js';
import type { RdmaDevice } from '../../../src/devices/discovery.js';
import { CdiSpecs } from '../../../src/dra/cdi.js';
import { Checkpoint } from '../../../src/dra/checkpoint.js';
import { ClaimState, claimPath, type V1ResourceClaim } from '../../../src/dra/claims.js';

const root = mkdtempSync(join(tmpdir(), 'dra-claims-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const NODE = 'node-a';
const DRIVER = 'erdma.smcr.erdma.io';
const devices = [
  { name: 'erdma_0', uverbs: '/dev/infiniband/uverbs0', pnetId: 'A0' },
  { name: 'erdma_2', uverbs: '/dev/infiniband/uverbs2', pnetId: 'A2' },
] as RdmaDevice[];

function world(name: string) {
  const api = new Map<string, V1ResourceClaim>();
  const reads: string[] = [];
  const client = {
    get: async (path: string) => {
      reads.push(path);
      await new Promise((r) => setTimeout(r, 5));
      return api.get(path);
    },
  } as unknown as KubeClient;
  const dir = join(root, name);
  const specs = new CdiSpecs(join(dir, 'cdi'), '/');
  const state = () =>
    new ClaimState({
      nodeName: NODE,
      client,
      discover: () => devices,
      specs,
      checkpoint: new Checkpoint(join(dir, 'state')),
      logger: pino({ level: 'silent' }),
    });
  const allocate = (
    ns: string,
    n: string,
    uid: string,
    results: [pool: string, device: string][],
  ) =>
    api.set(claimPath(ns, n), {
      metadata: { uid },
      status: {
        allocation: {
          devices: {
            results: results.map(([pool, device]) => ({
              request: 'erdma',
              driver: DRIVER,
              pool,
              device,
            })),
          },
        },
      },
    });
  return { api, reads, specs, state, allocate, dir };
}

describe('ClaimState', () => {
  it('reads a claim from the API once; a restarted driver answers it from the checkpoint and writes a lost spec again', async () => {
    const w = world('once');
    w.allocate('apps', 'two', 'u-1', [
      [NODE, 'erdma-0'],
      [NODE, 'erdma-2'],
    ]);
    const s = w.state();
    const first = await s.prepare({ namespace: 'apps', name: 'two', uid: 'u-1' });
    expect(
      'claim' in first && first.claim.devices.map((d) => [d.deviceName, d.rdmaDevice, d.pnetId]),
    ).toEqual([
      ['erdma-0', 'erdma_0', 'A0'],
      ['erdma-2', 'erdma_2', 'A2'],
    ]);
    expect(existsSync(w.specs.path('u-1'))).toBe(true);
    await s.prepare({ namespace: 'apps', name: 'two', uid: 'u-1' });
    expect(w.reads).toHaveLength(1);
    // Restart; the runtime's tmpfs lost the spec; the API has lost the claim too.
    rmSync(w.specs.path('u-1'));
    w.api.clear();
    const again = w.state();
    const answer = await again.prepare({ namespace: 'apps', name: 'two', uid: 'u-1' });
    expect(answer).toEqual(first);
    expect(w.reads).toHaveLength(1);
    expect(again.apiReads).toBe(0);
    expect(existsSync(w.specs.path('u-1'))).toBe(true);
  });

  it('refuses a claim whose UID changed (deleted and made again under its name), writing nothing', async () => {
    const w = world('uid');
    w.allocate('apps', 'web', 'u-new', [[NODE, 'erdma-0']]);
    const s = w.state();
    const r = await s.prepare({ namespace: 'apps', name: 'web', uid: 'u-old' });
    expect(r).toEqual({
      error: 'ResourceClaim apps/web has UID u-new, not u-old: it was replaced',
    });
    expect(existsSync(w.specs.path('u-old'))).toBe(false);
    expect(s.prepared()).toEqual([]);
  });

  it("refuses a device of another node's pool or one this node lacks, naming what the node has", async () => {
    const w = world('node');
    w.allocate('apps', 'elsewhere', 'u-2', [['node-b', 'erdma-0']]);
    w.allocate('apps', 'gone', 'u-3', [[NODE, 'erdma-7']]);
    const s = w.state();
    expect(await s.prepare({ namespace: 'apps', name: 'elsewhere', uid: 'u-2' })).toEqual({
      error: `device node-b/erdma-0 of ResourceClaim apps/elsewhere is not on this node (${NODE}: erdma-0, erdma-2)`,
    });
    expect(await s.prepare({ namespace: 'apps', name: 'gone', uid: 'u-3' })).toMatchObject({
      error: expect.stringContaining(`device ${NODE}/erdma-7`),
    });
    expect(await s.prepare({ namespace: 'apps', name: 'missing', uid: 'u-4' })).toEqual({
      error: 'ResourceClaim apps/missing not found',
    });
  });

  it('prepares one claim asked for twice at once once', async () => {
    const w = world('serial');
    w.allocate('apps', 'one', 'u-5', [[NODE, 'erdma-0']]);
    const s = w.state();
    const ask = () => s.serial(() => s.prepare({ namespace: 'apps', name: 'one', uid: 'u-5' }));
    const [a, b] = await Promise.all([ask(), ask()]);
    expect(a).toEqual(b);
    expect(w.reads).toHaveLength(1);
  });

  it('unprepare removes the spec and the entry, across a restart; an unknown claim is no error', async () => {
    const w = world('unprepare');
    w.allocate('apps', 'one', 'u-6', [[NODE, 'erdma-2']]);
    const s = w.state();
    await s.prepare({ namespace: 'apps', name: 'one', uid: 'u-6' });
    s.unprepare({ namespace: 'apps', name: 'one', uid: 'u-6' });
    expect(existsSync(w.specs.path('u-6'))).toBe(false);
    expect(w.state().prepared()).toEqual([]);
    expect(() => s.unprepare({ namespace: 'apps', name: 'x', uid: 'never' })).not.toThrow();
  });

  it('starts with no claims over a torn checkpoint (set aside), and prepares from the API again', async () => {
    const w = world('torn');
    w.allocate('apps', 'one', 'u-7', [[NODE, 'erdma-0']]);
    await w.state().prepare({ namespace: 'apps', name: 'one', uid: 'u-7' });
    writeFileSync(join(w.dir, 'state', 'checkpoint.json'), '{"version":1,"claims":[{"uid":');
    const s = w.state();
    expect(s.prepared()).toEqual([]);
    expect(await s.prepare({ namespace: 'apps', name: 'one', uid: 'u-7' })).toMatchObject({
      claim: { uid: 'u-7' },
    });
    expect(w.reads).toHaveLength(2);
  });
});
