// The DRA driver writing a claim's device status (src/dra/plugin.ts observe): once per
// change, not once per scan; a write the API server refuses (RBAC missing, the claim gone) is
// logged once per reason and tried again after STATUS_RETRY_MS, or at once when the status
// changes. The API is KubeClient's `request`, recorded here (the unit tier has no API server; the
// DRA suite runs the same code against a real one).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { KubeClient } from '../../../src/cluster/client.js';
import type { RdmaDevice } from '../../../src/devices/discovery.js';
import { CdiSpecs } from '../../../src/dra/cdi.js';
import { Checkpoint } from '../../../src/dra/checkpoint.js';
import { DraPlugin } from '../../../src/dra/plugin.js';
import { STATUS_RETRY_MS } from '../../../src/dra/status-writer.js';
import { erdmaDevice, preparedClaim } from './fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'dra-status-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const dev = (state: string): RdmaDevice => erdmaDevice(state, 'AB');

function driver(refuse: () => string | undefined) {
  const dir = mkdtempSync(join(root, 'd-'));
  mkdirSync(join(dir, 'state'));
  const checkpoint = new Checkpoint(join(dir, 'state'));
  checkpoint.save(
    new Map([['u-1', preparedClaim('u-1', 'web', { pnetId: 'AB', cdiDeviceIds: [] })]]),
  );
  const writes: {
    path: string;
    body: { status: { devices: { data: { portState: string } }[] } };
  }[] = [];
  const warnings: string[] = [];
  let now = 1_000_000;
  const client = {
    request: async (_m: string, path: string, o: { body: never }) => {
      const why = refuse();
      if (why) throw new Error(why);
      writes.push({ path, body: o.body });
      return {};
    },
  } as unknown as KubeClient;
  const logger = pino(
    { level: 'warn' },
    { write: (l: string) => void warnings.push(JSON.parse(l).msg) },
  );
  const plugin = new DraPlugin({
    kubeletDir: join(dir, 'kubelet'),
    nodeName: 'node-a',
    client,
    discover: () => [dev('ACTIVE')],
    specs: new CdiSpecs(join(dir, 'cdi'), '/'),
    checkpoint,
    logger,
    mechanism: () => 'bpf',
    now: () => now,
  });
  return { plugin, writes, warnings, tick: (ms: number) => (now += ms) };
}

describe("the DRA driver's writes of a claim's device status", () => {
  it("writes once per change, to the claim's status subresource, not once per scan", async () => {
    const d = driver(() => undefined);
    for (let i = 0; i < 5; i++) {
      await d.plugin.observe([dev('ACTIVE')]);
      d.tick(1000);
    }
    expect(d.writes.map((w) => w.path)).toEqual([
      '/apis/resource.k8s.io/v1/namespaces/apps/resourceclaims/web/status',
    ]);
    await d.plugin.observe([dev('DOWN')]);
    await d.plugin.observe([dev('DOWN')]);
    expect(d.writes.map((w) => w.body.status.devices[0]!.data.portState)).toEqual([
      'ACTIVE',
      'DOWN',
    ]);
  });

  it('a refused write is logged once and tried again after the retry time, or at once on a change', async () => {
    let refusing: string | undefined = 'resourceclaims.resource.k8s.io "web" is forbidden';
    const d = driver(() => refusing);
    for (let i = 0; i < 30; i++) {
      await d.plugin.observe([dev('ACTIVE')]);
      d.tick(1000);
    }
    expect(d.warnings).toHaveLength(1);
    expect(d.warnings[0]).toMatch(
      /cannot write the device status of ResourceClaim apps\/web: .*forbidden/,
    );
    expect(d.plugin.statusProblem).toMatch(/forbidden/);
    // A changed status is tried at once (and refused again: no new line, the reason is the same).
    await d.plugin.observe([dev('DOWN')]);
    expect(d.warnings).toHaveLength(1);
    // Allowed again: written at the next try after the retry time, and the problem cleared.
    refusing = undefined;
    await d.plugin.observe([dev('DOWN')]);
    expect(d.writes).toHaveLength(0);
    d.tick(STATUS_RETRY_MS);
    await d.plugin.observe([dev('DOWN')]);
    expect(d.writes).toHaveLength(1);
    expect(d.plugin.statusProblem).toBeUndefined();
  });
});
