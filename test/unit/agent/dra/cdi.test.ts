// The DRA driver's CDI spec (src/agent/dra/cdi.ts): a container given two devices by one claim is
// told of both, as the device plugin tells it (deviceEnv), in the spec's own edits (#94 item 2:
// one ERDMA_DEVICES= per device told a container of one).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { grant } from '../../../../src/agent/deviceplugin/allocation.js';
import { CdiStore, type PreparedClaim } from '../../../../src/agent/dra/cdi.js';
import { deviceEnv, type RdmaDevice } from '../../../../src/agent/node/discovery.js';

const dir = mkdtempSync(join(tmpdir(), 'cdi-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const device = (name: string, uverbs: string, pnetId: string): RdmaDevice =>
  ({ name, uverbs, pnetId }) as RdmaDevice;

describe('what a container is told of its devices, on both kubelet paths', () => {
  it('deviceEnv lists every device and PNETID, skipping devices without one', () => {
    expect(
      deviceEnv([
        { name: 'erdma_0', pnetId: '00163E10F8B0' },
        { name: 'erdma_2', pnetId: '' },
        { name: 'erdma_3', pnetId: '00163E10F8B3' },
      ]),
    ).toEqual({
      ERDMA_DEVICES: 'erdma_0,erdma_2,erdma_3',
      ERDMA_PNETIDS: '00163E10F8B0,00163E10F8B3',
    });
  });

  it("a DRA claim for two devices tells the container of both, as the device plugin's grant does", () => {
    const store = new CdiStore(join(dir, 'cdi'), join(dir, 'state'), '/');
    const devs = [
      device('erdma_0', '/dev/infiniband/uverbs0', '00163E10F8B0'),
      device('erdma_2', '/dev/infiniband/uverbs2', '00163E10F8B2'),
    ];
    const claims = new Map<string, PreparedClaim>();
    store.prepare(
      { uid: 'u-1', namespace: 'apps', name: 'two' },
      devs.map((rdma, i) => ({
        result: { requestNames: ['erdma'], poolName: 'node-a', deviceName: `erdma-${i * 2}` },
        rdma,
      })),
      claims,
    );
    const [file] = readdirSync(join(dir, 'cdi'));
    const spec = JSON.parse(readFileSync(join(dir, 'cdi', file!), 'utf8')) as {
      containerEdits: { env: string[] };
      devices: { containerEdits: { env?: string[]; deviceNodes: { path: string }[] } }[];
    };
    expect(spec.containerEdits.env).toEqual([
      'ERDMA_DEVICES=erdma_0,erdma_2',
      'ERDMA_PNETIDS=00163E10F8B0,00163E10F8B2',
    ]);
    // Each device brings its nodes, and no env of its own that would hide the other's.
    expect(spec.devices.map((d) => d.containerEdits.env)).toEqual([undefined, undefined]);
    expect(spec.devices.map((d) => d.containerEdits.deviceNodes.map((n) => n.path))).toEqual([
      ['/dev/infiniband/uverbs0', '/dev/infiniband/rdma_cm'],
      ['/dev/infiniband/uverbs2', '/dev/infiniband/rdma_cm'],
    ]);
    // The device plugin, given the same two devices, says the same.
    const viaPlugin = grant(['erdma_0-0', 'erdma_2-0'], devs, 'numa').envs;
    expect(spec.containerEdits.env).toEqual(Object.entries(viaPlugin).map(([k, v]) => `${k}=${v}`));
  });
});
