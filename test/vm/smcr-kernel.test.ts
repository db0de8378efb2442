// The proof that our CNI plugin and the agent's host-side steps really enable SMC-R: Debian's 6.1
// kernel boots under qemu (TCG) with Soft-RoCE (rdma_rxe, patched: test/smcr-vm/rxe-6.1-smcr.patch)
// standing in for eRDMA. Inside, two pods chained through Debian's bridge plugin and our plugin
// (SMC-R annotation in runtimeConfig) talk over AF_SMC and both ends report SMCR via smc_diag, with
// RDMA packets counted on the device; a pair without the annotation falls back to TCP; then our
// plugin's CHECK and DEL. Before all that, the smc module is loaded by the node agent's own
// driver code (agent.manageDriver) with the VM's modprobe. test/smcr-vm/init.sh runs in the VM;
// this reads its console.
import { beforeAll, describe, expect, it } from 'vitest';
import { describeReason } from '../../src/agent/observe/smc.js';
import { requires, root } from '../helpers/requires.js';
import { bootVm, type VmRecord } from '../helpers/vm.js';

const skip = requires('the SMC-R kernel test (apt-get, qemu)', root) !== '';

describe.skipIf(skip)(
  'SMC-R on a real kernel: our CNI chain and host side make two pods talk SMC-R',
  () => {
    let lines: VmRecord[] = [];
    let consoleText = '';
    const find = (pred: (r: VmRecord) => boolean): VmRecord => {
      const r = lines.find(pred);
      if (!r) throw new Error(`missing result in the VM console:\n${consoleText.slice(-3000)}`);
      return r;
    };

    beforeAll(async () => {
      // SMCR_VM_CONSOLE=FILE keeps the console (how test/fixtures/smc/ was captured).
      const vm = await bootVm({ consoleFile: process.env.SMCR_VM_CONSOLE });
      consoleText = vm.consoleText;
      lines = vm.lines;
      console.log(`SMC-R kernel test: VM run ${vm.summary}`);
    }, 25 * 60_000);

    it('the VM ran every step', () => {
      expect(
        lines.filter((r) => 'FAIL' in r),
        consoleText.slice(-3000),
      ).toEqual([]);
      expect(find((r) => 'DONE' in r).DONE).toBe('ok');
      expect(find((r) => 'kernel' in r).kernel).toMatch(/^6\.1\./);
    });

    it("the agent's driver code loaded smc with the VM's real modprobe (the erdma module is not there, and says so)", () => {
      const r = find((x) => 'agent_driver_status' in x);
      expect(r).toMatchObject({
        agent_driver_status: 'change',
        agent_smc_loaded: 'true',
        agent_driver_done: 'erdma_compat_mode=N:failed,smc:ok',
      });
      expect(r.agent_driver_errors).toMatch(/erdma/);
    });

    it('our plugin added the pod interface to the pnet table only for annotated pods, passing prevResult through', () => {
      for (const pod of ['a', 'b']) {
        expect(find((r) => r.pod === pod && 'annotated' in r)).toMatchObject({
          annotated: 'yes',
          pnet_eth0: 'ERDMATEST0001 eth eth0 ',
        });
      }
      for (const pod of ['c', 'd'])
        expect(find((r) => r.pod === pod && 'annotated' in r)).toMatchObject({
          annotated: 'no',
          pnet_eth0: '',
        });
      for (const pod of ['a', 'b', 'c', 'd']) {
        const r = find((x) => x.pod === pod && 'bridge_result' in x);
        expect(JSON.parse(r.our_result as string)).toEqual(JSON.parse(r.bridge_result as string));
      }
    });

    it('annotated pods talk SMC-R on both ends, and the data goes over RDMA', () => {
      const r = find((x) => x.pair === 'a-b');
      expect(r.client).toMatch(/^SMCPAIR client mode=SMCR fallback=0x00000000 bytes=4194304/);
      expect(r.server).toMatch(/^SMCPAIR server mode=SMCR fallback=0x00000000 bytes=4194304/);
      // 4 MiB in RoCEv2 packets of at most one MTU: well over a thousand.
      expect(Number(r.rdma_sent_pkts)).toBeGreaterThan(1000);
    });

    it("our binary reads from the kernel what the pods' connections run on, while they are open", () => {
      const json = (key: string): unknown => JSON.parse(find((x) => key in x)[key] as string);
      // The SMC-R pair: SMCR on each pod's Soft-RoCE device, the 4 MiB counted on the connection.
      for (const [pod, dev, role] of [
        ['a', 'rxe_a', 'client'],
        ['b', 'rxe_b', 'server'],
      ] as const) {
        const socks = (
          json(`smc_sockets_${pod}`) as {
            state: string;
            mode: string;
            link?: { dev: string; role: string };
            conn?: { txBytes: number; rxBytes: number };
          }[]
        ).filter((x) => x.state !== 'LISTEN');
        expect(socks).toHaveLength(1);
        expect(socks[0]).toMatchObject({
          state: 'ACTIVE',
          mode: 'SMCR',
          link: { dev, role },
          conn: { txBytes: 4194304, rxBytes: 4194304 },
        });
        expect((json(`smc_summary_${pod}`) as { summary: unknown }).summary).toMatchObject({
          sockets: 1,
          byMode: { SMCR: 1, TCP: 0 },
          devices: [{ dev, port: 1, connections: 1 }],
        });
        const stats = json(`smc_stats_${pod}`) as {
          stats: { available: boolean; counters: { smcr: { txBytes: number } } };
        };
        expect(stats.stats.available).toBe(true);
        expect(stats.stats.counters.smcr.txBytes).toBeGreaterThanOrEqual(4194304);
      }
      // The device counters, read by the agent's own reader, rose by at least the packets 4 MiB
      // needs (one MTU-sized packet carries at most 4 KiB); the negative pair's did not move.
      const counters = (key: string): { scheme: string; txPackets: number; rxPackets: number }[] =>
        json(key) as never;
      const [before] = counters('agent_counters_before_a');
      const [after] = counters('agent_counters_after_a');
      expect(after).toMatchObject({ scheme: 'rxe' });
      expect(after!.txPackets - before!.txPackets).toBeGreaterThanOrEqual(4194304 / 4096);
      expect(
        counters('agent_counters_after_c')[0]!.txPackets -
          counters('agent_counters_before_c')[0]!.txPackets,
      ).toBe(0);
      // The pair without the annotation: TCP, with the decline decoded on both sides.
      expect(json('smc_sockets_c')).toMatchObject([
        { mode: 'TCP', fallback: { reason: '0x03030000' } },
      ]);
      expect(json('smc_sockets_d')).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            mode: 'TCP',
            fallback: { reason: '0x05000000', peerReason: '0x03030000' },
          }),
        ]),
      );
      expect(json('smc_summary_c')).toMatchObject({
        netns: '/run/netns/c',
        summary: { byMode: { SMCR: 0, TCP: 1 }, fallbacks: { '0x03030000': 1 } },
      });
      expect(
        (json('smc_stats_c') as { fallbacks: { reasons: unknown[] } }).fallbacks.reasons,
      ).toEqual([{ side: 'client', reason: '0x03030000', count: 1 }]);
    });

    it('an IPv6 connection between SMC-R pods that keep IPv6 is reported as IPv6, with its mode and any fallback reason', () => {
      const r = find((x) => x.pair === 'e-f');
      const json = (key: string): unknown => JSON.parse(find((x) => key in x)[key] as string);
      const client = (
        json('smc_sockets_e') as {
          family: string;
          mode: string;
          fallback?: { reason: string };
          local: string;
          peer: string;
        }[]
      ).find((x) => x.peer.startsWith('[fd00::f]'));
      expect(client, JSON.stringify(json('smc_sockets_e'))).toBeDefined();
      expect(client).toMatchObject({
        family: 'IPv6',
        local: expect.stringMatching(/^\[fd00::e\]:\d+$/),
        peer: '[fd00::f]:5003',
      });
      // What the kernel decided is what both smc-pair (its own smc_diag read) and our binary report.
      const mode = /mode=(\w+)/.exec(r.client as string)?.[1];
      expect(client!.mode).toBe(mode);
      // On this kernel SMC-R over IPv6 with a pnet entry for eth0 declines: reported, with a reason we decode.
      expect(mode).toBe('TCP');
      expect(describeReason(client!.fallback!.reason).name).not.toBe('UNKNOWN');
      console.log(
        `SMC-R kernel test: the IPv6 pair ran ${mode} (fallback ${client!.fallback!.reason}, ${describeReason(client!.fallback!.reason).name})`,
      );
    });

    it('the same pair without the annotation falls back to TCP (the negative control)', () => {
      const r = find((x) => x.pair === 'c-d');
      expect(r.client).toMatch(
        /^SMCPAIR client mode=TCP fallback=0x0[1-9a-f][0-9a-f]{6} bytes=4194304/,
      );
      expect(r.server).toMatch(/^SMCPAIR server mode=TCP/);
      expect(Number(r.rdma_sent_pkts)).toBe(0);
    });

    it('records what it did, passes CHECK, and DEL removes the pnet entry and the state, twice', () => {
      const state = JSON.parse(find((x) => 'state_a' in x).state_a as string);
      expect(state).toMatchObject({
        podName: 'a',
        podUid: 'uid-a',
        outcome: 'partial',
        missing: ['net.smc.tcp2smc'],
        pnet: { id: 'ERDMATEST0001', eth: 'eth0', added: true },
      });
      expect(state.sysctls['net.ipv6.conf.all.disable_ipv6']).toBe('1');
      expect(find((x) => 'check_a' in x).check_a).toBe('0');
      expect(find((x) => 'del_a' in x).del_a).toBe('0');
      const after = find((x) => 'pnet_after_del_a' in x);
      expect(after.pnet_after_del_a).toBe('');
      expect(after.state_after_del).not.toContain('a_eth0.json');
      expect(find((x) => 'del_again_a' in x).del_again_a).toBe('0');
    });
  },
);
