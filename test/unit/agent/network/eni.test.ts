// Planning the eRDMA ENIs' configuration from the node's links and routes and the instance
// metadata, without touching a network (src/agent/network/eni.ts): route metrics, addresses,
// gateway, MTU. test/integration/agent/eni.test.ts applies plans in real network namespaces.
import { describe, expect, it } from 'vitest';
import { metricFor, mtuFor, parseCidr, planEni } from '../../../../src/agent/network/eni.js';
import type { NetState } from '../../../../src/native/contract.js';

const PRIMARY = '00:16:3e:00:00:01';
const ENI1 = '00:16:3e:00:00:02';
const ENI2 = '00:16:3e:00:00:03';
const FOREIGN = '00:16:3e:00:00:04';
const ENIS = {
  [ENI1]: { address: '192.168.1.10', cidr: '192.168.1.0/24', gateway: '192.168.1.253' },
  [ENI2]: { address: '192.168.2.10', cidr: '192.168.2.0/24', gateway: '192.168.2.253' },
  [FOREIGN]: { address: '192.168.3.10', cidr: '192.168.3.0/24', gateway: '192.168.3.253' },
};

describe('ENI planning (pure)', () => {
  const state: NetState = {
    links: [
      { index: 2, name: 'eth0', mac: PRIMARY, mtu: 1500, up: true },
      { index: 3, name: 'eth1', mac: ENI1, mtu: 1500, up: false },
      { index: 4, name: 'eth2', mac: ENI2, mtu: 1500, up: true },
    ],
    addrs: [
      { index: 2, addr: '192.168.0.10', prefix: 24, scope: 0 },
      { index: 4, addr: '169.254.3.3', prefix: 16, scope: 0 },
    ],
    routes: [
      { dst: '0.0.0.0/0', oif: 2, metric: 100, gateway: '192.168.0.1' },
      { dst: '192.168.1.0/24', oif: 2, metric: 0 },
    ],
  };

  it('metrics: 200, or one above the highest for that destination', () => {
    expect(metricFor(state.routes, '0.0.0.0/0')).toBe(200);
    expect(
      metricFor([...state.routes, { dst: '0.0.0.0/0', oif: 3, metric: 200 }], '0.0.0.0/0'),
    ).toBe(201);
    expect(metricFor([{ dst: '0.0.0.0/0', oif: 3, metric: 4000 }], '0.0.0.0/0')).toBe(4001);
  });

  it('MTU: auto follows a jumbo primary only', () => {
    expect(mtuFor('auto', { index: 1, name: 'eth0', mtu: 8500, up: true })).toBe(8500);
    expect(mtuFor('auto', { index: 1, name: 'eth0', mtu: 1500, up: true })).toBe(0);
    expect(mtuFor(9000, undefined)).toBe(9000);
  });

  it('a link-local address does not count as configured; inconsistent metadata is refused', () => {
    expect(planEni(state, ENI2, PRIMARY, ENIS[ENI2], 'auto')).toMatchObject({
      status: 'configure',
      conf: { dev: 'eth2', address: '192.168.2.10', prefix: 24 },
    });
    expect(
      planEni(
        state,
        ENI1,
        PRIMARY,
        { address: '10.0.0.1', cidr: '192.168.1.0/24', gateway: '192.168.1.253' },
        'auto',
      ),
    ).toMatchObject({ status: 'failed', detail: expect.stringMatching(/inconsistent/) });
    expect(
      planEni(
        state,
        ENI1,
        PRIMARY,
        { address: '192.168.1.10', cidr: '192.168.1.0/33', gateway: '192.168.1.253' },
        'auto',
      ).status,
    ).toBe('failed');
    expect(parseCidr('192.168.1.7/24')).toEqual({ network: '192.168.1.0', prefix: 24 });
  });
});

describe('a whole ENI plan', () => {
  it("gives the subnet and default routes their metrics, the gateway, and the primary's jumbo MTU", () => {
    const state: NetState = {
      links: [
        { index: 2, name: 'eth0', mac: PRIMARY, mtu: 8500, up: true },
        { index: 3, name: 'eth1', mac: ENI1, mtu: 1500, up: false },
      ],
      addrs: [{ index: 2, addr: '192.168.0.10', prefix: 24, scope: 0 }],
      routes: [
        { dst: '0.0.0.0/0', oif: 2, metric: 100, gateway: '192.168.0.1' },
        { dst: '0.0.0.0/0', oif: 9, metric: 200, gateway: '192.168.9.1' },
        { dst: '192.168.1.0/24', oif: 9, metric: 205 },
      ],
    };
    const plan = planEni(
      state,
      ENI1,
      PRIMARY,
      { address: '192.168.1.10', cidr: '192.168.1.0/24', gateway: '192.168.1.253' },
      'auto',
    );
    expect(plan).toEqual({
      status: 'configure',
      dev: 'eth1',
      detail: 'configure eth1 as 192.168.1.10/24',
      conf: {
        dev: 'eth1',
        address: '192.168.1.10',
        prefix: 24,
        cidr: '192.168.1.0/24',
        gateway: '192.168.1.253',
        metricSubnet: 206,
        metricDefault: 201,
        mtu: 8500,
      },
    });
    // A fixed MTU wins; a standard primary leaves the MTU alone (0).
    expect(
      planEni(
        state,
        ENI1,
        PRIMARY,
        { address: '192.168.1.10', cidr: '192.168.1.0/24', gateway: '192.168.1.253' },
        9000,
      ),
    ).toMatchObject({ conf: { mtu: 9000 } });
    const standard = { ...state, links: [{ ...state.links[0]!, mtu: 1500 }, state.links[1]!] };
    expect(
      planEni(
        standard,
        ENI1,
        PRIMARY,
        { address: '192.168.1.10', cidr: '192.168.1.0/24', gateway: '192.168.1.253' },
        'auto',
      ),
    ).toMatchObject({ conf: { mtu: 0 } });
  });
});

describe('agent.podNetworks auto: only on an ECS instance (#100)', () => {
  it("asks the metadata service only where the host's DMI vendor says Alibaba Cloud", async () => {
    const { onEcs } = await import('../../../../src/agent/network/pod-networks.js');
    const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const root = mkdtempSync(join(tmpdir(), 'dmi-'));
    try {
      expect(onEcs(root)).toBe(false);
      mkdirSync(join(root, 'sys/class/dmi/id'), { recursive: true });
      writeFileSync(join(root, 'sys/class/dmi/id/sys_vendor'), 'QEMU\n');
      expect(onEcs(root)).toBe(false);
      writeFileSync(join(root, 'sys/class/dmi/id/sys_vendor'), 'Alibaba Cloud\n');
      expect(onEcs(root)).toBe(true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
