// What the DRA driver's unit tests are given: an eRDMA device as discovery reads it, and a claim
// for it as the driver prepared it (one device, request "erdma", pool node-a).
import type { RdmaDevice } from '../../../src/devices/discovery.js';
import type { PreparedClaim, PreparedDevice } from '../../../src/dra/claim.js';

/** erdma_0 on eth1, its port 1 in `state` (healthy when ACTIVE). */
export const erdmaDevice = (state: string, pnetId: string): RdmaDevice =>
  ({
    name: 'erdma_0',
    netdev: 'eth1',
    mac: '00:16:3e:10:f8:b0',
    pnetId,
    driverMode: 'default',
    uverbs: '/dev/infiniband/uverbs0',
    healthy: state === 'ACTIVE',
    ports: [{ port: 1, state, linkLayer: 'Ethernet' }],
  }) as unknown as RdmaDevice;

/** Claim `uid` (apps/`name`) holding erdma-0, with what the test sets of that device. */
export const preparedClaim = (
  uid: string,
  name: string,
  device: Pick<PreparedDevice, 'pnetId' | 'cdiDeviceIds'> & Partial<PreparedDevice>,
): PreparedClaim => ({
  uid,
  namespace: 'apps',
  name,
  devices: [
    {
      requestNames: ['erdma'],
      poolName: 'node-a',
      deviceName: 'erdma-0',
      rdmaDevice: 'erdma_0',
      uverbs: '/dev/infiniband/uverbs0',
      ...device,
    },
  ],
});
