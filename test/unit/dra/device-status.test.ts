// What a ResourceClaim says of its devices (src/dra/device-status.ts) and the health the
// kubelet is streamed (src/dra/health.ts): a Ready condition and a health that follow the
// port, our facts as data, the ENI as networkData; a stream sends on open, on change and on the
// heartbeat, not on every scan.
import { describe, expect, it } from 'vitest';
import type { RdmaDevice } from '../../../src/devices/discovery.js';
import type { PreparedClaim } from '../../../src/dra/claim.js';
import { deviceStatuses, statusKey } from '../../../src/dra/device-status.js';
import { HEALTH_TIMEOUT_S, HealthStreams } from '../../../src/dra/health.js';
import { erdmaDevice, preparedClaim } from './fixtures.js';

const dev = (state: string): RdmaDevice => erdmaDevice(state, '00163E10F8B0');

const claim: PreparedClaim = preparedClaim('u-1', 'web', {
  pnetId: '00163E10F8B0',
  cdiDeviceIds: [],
  shareId: 's-1',
});
const t0 = new Date('2026-12-05T03:00:00Z');

describe("a claim's device status", () => {
  it('says the RDMA device, PNETID, port, mechanism and ENI, Ready while the port is ACTIVE', () => {
    const [s] = deviceStatuses(claim, new Map([['erdma_0', dev('ACTIVE')]]), 'smc-r', t0);
    expect(s).toEqual({
      driver: 'erdma.smcr.erdma.io',
      pool: 'node-a',
      device: 'erdma-0',
      shareID: 's-1',
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'PortActive',
          message: 'erdma_0 port 1 is ACTIVE',
          lastTransitionTime: '2026-12-05T03:00:00.000Z',
        },
      ],
      data: {
        rdmaDevice: 'erdma_0',
        pnetId: '00163E10F8B0',
        portState: 'ACTIVE',
        smcMechanism: 'smc-r',
        driverMode: 'default',
        uverbs: '/dev/infiniband/uverbs0',
      },
      networkData: { interfaceName: 'eth1', hardwareAddress: '00:16:3e:10:f8:b0' },
    });
  });

  it('turns Ready False when the port goes down, Unknown when the device is gone; only a change makes a new key', () => {
    const up = deviceStatuses(claim, new Map([['erdma_0', dev('ACTIVE')]]), 'smc-r', t0);
    const later = deviceStatuses(claim, new Map([['erdma_0', dev('ACTIVE')]]), 'smc-r', new Date());
    expect(statusKey(later)).toBe(statusKey(up));
    const down = deviceStatuses(claim, new Map([['erdma_0', dev('DOWN')]]), 'smc-r', t0);
    expect(down[0]!.conditions[0]).toMatchObject({ status: 'False', reason: 'PortNotActive' });
    expect(down[0]!.data.portState).toBe('DOWN');
    expect(statusKey(down)).not.toBe(statusKey(up));
    const gone = deviceStatuses(claim, new Map(), 'smc-r', t0);
    expect(gone[0]!.conditions[0]).toMatchObject({ status: 'Unknown', reason: 'DeviceGone' });
    expect(gone[0]!.networkData).toBeUndefined();
  });
});

describe('the health stream', () => {
  const stream = () => {
    const got: unknown[] = [];
    return {
      got,
      call: {
        write: (m: unknown) => (got.push(m), true),
        end: () => undefined,
        on: () => undefined,
      },
    };
  };

  it('sends the list on open, again on a change and on the heartbeat, not on every scan', () => {
    let now = 1_000_000;
    const h = new HealthStreams('node-a', () => now);
    h.observe([dev('ACTIVE')]);
    const s = stream();
    h.handler()(s.call);
    expect(s.got).toEqual([
      {
        devices: [
          {
            device: { pool_name: 'node-a', device_name: 'erdma-0' },
            health: 'HEALTHY',
            last_updated_time: 1000,
            health_check_timeout_seconds: HEALTH_TIMEOUT_S,
            message: 'erdma_0 port 1 ACTIVE',
          },
        ],
      },
    ]);
    now += 1000;
    h.observe([dev('ACTIVE')]);
    expect(s.got).toHaveLength(1);
    h.observe([dev('DOWN')]);
    expect(s.got).toHaveLength(2);
    expect((s.got[1] as { devices: { health: string }[] }).devices[0]!.health).toBe('UNHEALTHY');
    now += (HEALTH_TIMEOUT_S * 1000) / 3;
    h.observe([dev('DOWN')]);
    expect(s.got).toHaveLength(3);
    expect(h.watchers).toBe(1);
  });
});
