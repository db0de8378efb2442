// Pods of one node talk SMC-D through shared memory (#78): Debian trixie's 6.12 booted with smc.ko
// and smc_diag.ko built from Debian's own linux-source with loopback-ism (CONFIG_SMC_LO, which
// Debian leaves off; test/smcr-vm/trixie.sh builds them, cached), the scenario
// test/smcr-vm/smcd.sh. The annotated pods a and b each also have an RDMA device on the node's
// PNETID, as on an eRDMA node: the CLC handshake still picks SMC-D v2, so no RDMA packet moves.
// The programs are transparent.test.ts's, unmodified, under the IPPROTO_SMC BPF program our plugin
// switches on per pod netns. Negative controls: the same programs between pods without the
// annotation stay TCP; an annotated client to an unannotated server falls back and delivers.
// The SMC-R cases stay in transparent.test.ts, on Debian's own smc module (no loopback-ism there,
// so the same pods choose SMC-R over Soft-RoCE).
import { beforeAll, describe, expect, it } from 'vitest';
import { requires, root } from '../helpers/requires.js';
import { bootVm, type VmRun } from '../helpers/vm.js';
import {
  expectRanEveryStep,
  expectTcp,
  RUNTIMES,
  statsDelta,
  type Socket,
  type Stats,
  type Summary,
} from '../helpers/vm-pods.js';

const skip = requires('the SMC-D kernel test (apt-get, qemu)', root) !== '';

// trixie's 6.12 with smc.ko built with loopback-ism, and Debian's newest line built with SMC and
// DIBS loopback (test/smcr-vm/newest.sh): the same scenario on both.
const KERNELS = [
  { kernel: 'trixie', smc: 'lo', release: /^6\.12\./ },
  { kernel: 'newest', smc: 'stock', release: /^7\./ },
] as const;

describe.skipIf(skip).each(KERNELS)(
  'pods of one node talk SMC-D over loopback-ism ($kernel, bpf)',
  ({ kernel, smc, release }) => {
    let vm: VmRun;

    beforeAll(async () => {
      vm = await bootVm({
        kernel,
        smc,
        append: 'smcr_scenario=smcd',
        watchdogSec: 600,
      });
      console.log(`SMC-D on ${kernel} with loopback-ism: VM run ${vm.summary}`);
    }, 40 * 60_000);

    const active = (key: string): Socket[] =>
      (vm.json(key) as Socket[]).filter((s) => s.state !== 'LISTEN');

    /** Both ends of the case LABEL between CLIENT and SERVER were SMC-D, counted as such, no fallback. */
    const expectSmcd = (label: string, client: string, server: string, conns: number): void => {
      for (const pod of [client, server]) {
        const socks = active(`${label}_sockets_${pod}`);
        expect(socks.length, `${label} in ${pod}`).toBeGreaterThanOrEqual(conns);
        for (const s of socks) expect(s, `${label} in ${pod}`).toMatchObject({ mode: 'SMCD' });
        expect((vm.json(`${label}_summary_${pod}`) as Summary).summary).toMatchObject({
          byMode: { SMCR: 0, TCP: 0 },
          plainTcp: 0,
          devices: [],
        });
      }
    };

    it('the VM ran every step on the kernel asked for, with loopback-ism loaded', () => {
      expectRanEveryStep(vm, release);
      expect(vm.lines.filter((r) => 'settle' in r)).toEqual([]);
    });

    it("the node's probe finds loopback-ism beside the bpf mechanism", () => {
      const m = vm.json('mechanisms') as Record<string, { ok: boolean; why?: string }> & {
        mechanism: string;
      };
      expect(m.mechanism).toBe('bpf');
      expect(m.loopbackIsm).toEqual({ ok: true });
    });

    it('iperf3 runs SMC-D on both ends, with an RDMA device at hand: no RDMA packet moves', () => {
      const r = vm.find((x) => x.iperf === 'a-b');
      expect(r.rc).toBe('0');
      expect(r.client).toMatch(/sender .*receiver/);
      expectSmcd('iperf', 'a', 'b', 2);
      expect(Number(r.rdma_sent_pkts)).toBe(0);
      const c = vm.find((x) => x.iperf === 'c-d');
      expect(c.rc).toBe('0');
      for (const pod of ['c', 'd']) {
        expect(active(`iperf_sockets_${pod}`)).toEqual([]);
        expect((vm.json(`iperf_summary_${pod}`) as Summary).summary.plainTcp).toBe(2);
      }
    });

    for (const runtime of RUNTIMES)
      it(`${runtime.name} runs SMC-D on both ends; without the annotation it stays on TCP`, () => {
        const key = runtime.key;
        const r = vm.find((x) => x.runtime === `${key}_a`);
        expect(r.rc, r.client).toBe('0');
        expect(r.client).toMatch(runtime.output);
        expectSmcd(`${key}_a`, 'a', 'b', runtime.conns);
        for (const pod of ['a', 'b']) {
          // SMC's own counters in each netns: SMC-D connections, none on SMC-R, no fallback.
          const d = statsDelta(vm, `${key}_a`, pod, 'smcd');
          expect(d.fallbacks, `${key} in ${pod}`).toBe(0);
          expect(d.successes).toBeGreaterThanOrEqual(runtime.conns);
          expect(d.bytes).toBeGreaterThan(0);
          expect(statsDelta(vm, `${key}_a`, pod, 'smcr').successes).toBe(0);
        }
        expect(Number(r.rdma_sent_pkts)).toBe(0);
        const c = vm.find((x) => x.runtime === `${key}_c`);
        expect(c.rc, c.client).toBe('0');
        expect(c.client).toMatch(runtime.output);
        expectTcp(vm, `${key}_c`, 'c', 'd', runtime.conns);
      });

    it('an annotated client to an unannotated server falls back cleanly (PEERNOSMC) and delivers its bytes', () => {
      const r = vm.find((x) => x.runtime === 'mixed_a');
      expect(r.rc, r.client).toBe('0');
      expect(r.client).toMatch(/got 4194304 bytes/);
      const socks = active('mixed_a_sockets_a');
      expect(socks).toHaveLength(1);
      expect(socks[0]).toMatchObject({
        mode: 'TCP',
        fallback: { reason: '0x03010000' },
      });
      expect(statsDelta(vm, 'mixed_a', 'a', 'smcd')).toMatchObject({ successes: 0, fallbacks: 1 });
      // The server's pod has no SMC at all.
      expect(active('mixed_a_sockets_c')).toEqual([]);
    });

    it.each([
      ['inpod_lo', '127.0.0.1'],
      ['inpod_ip', "the pod's own address"],
    ])('inside one pod (%s: a sidecar over %s) the connection is SMC-D at both ends', (label) => {
      const r = vm.find((x) => x.runtime === label);
      expect(r.rc, r.client).toBe('0');
      expect(r.client).toMatch(/got 4194304 bytes/);
      const socks = active(`${label}_sockets_a`);
      // Client and server ends, both in pod a.
      expect(socks).toHaveLength(2);
      for (const s of socks) expect(s).toMatchObject({ mode: 'SMCD' });
      const d = statsDelta(vm, label, 'a', 'smcd');
      expect(d.fallbacks).toBe(0);
      // The client's and the server's success, both in the one netns.
      expect(d.successes).toBeGreaterThanOrEqual(2);
    });

    it('the preload library swaps no loopback connection where loopback-ism serves lo: all three are SMC-D', () => {
      const line = Object.fromEntries(
        (vm.find((r) => r.loopback_preload !== undefined).loopback_preload ?? '')
          .split(' ')
          .map((kv) => kv.split('=')),
      );
      // AF_SMC (43) before and after connect, for the blocking and the non-blocking socket alike.
      expect(line).toMatchObject({
        before: '43',
        after: '43',
        nonblocking: '43',
        data: 'ok',
        nbdata: 'ok',
        epoll: 'writable',
      });
      const smcd = (key: string): { ok: number; fell: number } => {
        const s = vm.json(key) as Stats;
        const c = s.stats.counters.smcd;
        return {
          ok: (c.clientSuccessV1 ?? 0) + (c.clientSuccessV2 ?? 0),
          fell: s.fallbacks.reasons.reduce((n, r) => n + r.count, 0),
        };
      };
      const [a, b] = [smcd('loopback_stats_0'), smcd('loopback_stats_1')];
      expect(b.ok - a.ok).toBe(3);
      expect(b.fell - a.fell).toBe(0);
    });
  },
);
