// "No change to the application", shown with programs we did not write: Debian's iperf3
// (dynamically linked) and busybox's nc (static), unmodified, in pods set up by our CNI chain, open
// ordinary TCP sockets; nothing in them knows SMC. test/smcr-vm/transparent.sh runs in the VM.
// - trixie's 6.12 kernel: the mechanism found is the IPPROTO_SMC BPF program (loaded and pinned as
//   the agent does, switched on for the annotated pods' netns by our plugin at ADD, off at DEL).
// - bookworm's 6.1 kernel: AF_SMC only, so the preload library, given to the annotated pods as the
//   webhook does (LD_PRELOAD); the static nc stays on TCP and the summary counts it as plain TCP.
// Both: iperf3 runs SMC-R on both ends with the Soft-RoCE counters moving; the unannotated pair
// stays on TCP (the negative control).
import { beforeAll, describe, expect, it } from 'vitest';
import { requires, root } from '../helpers/requires.js';
import { bootVm, type VmRun } from '../helpers/vm.js';

const skip = requires('the transparent SMC-R kernel test (apt-get, qemu)', root) !== '';

interface Socket {
  state: string;
  mode: string;
  local: string;
  peer: string;
  link?: { dev: string; role: string };
}
interface Summary {
  summary: { sockets: number; byMode: { SMCR: number; TCP: number }; plainTcp: number };
}

const KERNELS = [
  { kernel: 'trixie', release: /^6\.12\./, mechanism: 'bpf' },
  { kernel: 'bookworm', release: /^6\.1\./, mechanism: 'preload' },
] as const;

describe.skipIf(skip).each(KERNELS)(
  'unmodified programs run SMC-R on $kernel ($mechanism)',
  ({ kernel, release, mechanism }) => {
    let vm: VmRun;

    beforeAll(async () => {
      vm = await bootVm({ kernel, append: 'smcr_scenario=transparent' });
      console.log(`transparent SMC-R on ${kernel}: VM run ${vm.summary}`);
    }, 40 * 60_000);

    const active = (key: string): Socket[] =>
      (vm.json(key) as Socket[]).filter((s) => s.state !== 'LISTEN');

    it('the VM ran every step on the kernel asked for', () => {
      expect(
        vm.lines.filter((r) => 'FAIL' in r),
        vm.consoleText.slice(-3000),
      ).toEqual([]);
      expect(vm.find((r) => 'DONE' in r).DONE).toBe('ok');
      expect(vm.find((r) => 'kernel' in r).kernel).toMatch(release);
      // Every connection was up at both ends before its sockets were listed (a line per one not).
      expect(vm.lines.filter((r) => 'settle' in r)).toEqual([]);
    });

    it(`the node's probe finds ${mechanism}, and says why the others do not work`, () => {
      const m = vm.json('mechanisms') as Record<string, { ok: boolean; why?: string }> & {
        mechanism: string;
      };
      expect(m.mechanism).toBe(mechanism);
      expect(m.tcp2smc).toMatchObject({ ok: false, why: expect.stringMatching(/tcp2smc/) });
      expect(m.afSmc).toEqual({ ok: true });
      if (mechanism === 'bpf') {
        expect(m.ipprotoSmc).toEqual({ ok: true });
        expect(m.bpf).toEqual({ ok: true });
      } else {
        expect(m.ipprotoSmc).toMatchObject({
          ok: false,
          why: expect.stringMatching(/IPPROTO_SMC/),
        });
        expect(m.bpf!.ok).toBe(false);
      }
    });

    it('our plugin recorded the mechanism, and needs no tcp2smc knob', () => {
      const state = vm.json('state_a') as Record<string, unknown>;
      expect(state).toMatchObject({ outcome: 'applied', missing: [], mechanism });
      const bpf = vm.json('bpf_status') as { loaded: boolean; netns: { cookie: number }[] };
      if (mechanism === 'bpf') {
        // The two annotated pods' netns, and only them, are switched on.
        expect(bpf.loaded).toBe(true);
        expect(bpf.netns).toHaveLength(2);
        expect(bpf.netns.map((n) => String(n.cookie))).toContain(
          (state.bpf as { cookie: string }).cookie,
        );
      } else {
        expect(bpf).toEqual({ loaded: false, netns: [] });
      }
    });

    it('iperf3 runs SMC-R on both ends, over RDMA', () => {
      const r = vm.find((x) => x.iperf === 'a-b');
      expect(r.rc).toBe('0');
      expect(r.client).toMatch(/sender .*receiver/);
      for (const [pod, role] of [
        ['a', 'client'],
        ['b', 'server'],
      ] as const) {
        const socks = active(`iperf_sockets_${pod}`);
        // iperf3's control connection and its data stream.
        expect(socks.length).toBeGreaterThanOrEqual(2);
        for (const s of socks)
          expect(s).toMatchObject({ mode: 'SMCR', link: { dev: `rxe_${pod}`, role } });
        expect((vm.json(`iperf_summary_${pod}`) as Summary).summary).toMatchObject({
          byMode: { TCP: 0 },
          plainTcp: 0,
        });
      }
      // Each connection's ends, as each pod sees them: the pods' own addresses, not 0.0.0.0 (6.12's
      // smc_diag gives an IPPROTO_SMC socket its ports only; our binary finds its addresses).
      // iperf3's server listens on both stacks, so its ends may read as IPv4-mapped IPv6.
      const v4 = (a: string): string => a.replace(/^\[::ffff:([\d.]+)\]/, '$1');
      const client = active('iperf_sockets_a').map((s) => `${v4(s.local)} ${v4(s.peer)}`);
      const server = active('iperf_sockets_b').map((s) => `${v4(s.peer)} ${v4(s.local)}`);
      for (const end of client)
        expect(end).toMatch(/^10\.\d+\.\d+\.\d+:\d+ 10\.\d+\.\d+\.\d+:5201$/);
      expect(client.sort()).toEqual(server.sort());
      expect(Number(r.rdma_sent_pkts)).toBeGreaterThan(1000);
    });

    it('the pods without the annotation stay on TCP (the negative control)', () => {
      const r = vm.find((x) => x.iperf === 'c-d');
      expect(r.rc).toBe('0');
      for (const pod of ['c', 'd']) {
        expect(active(`iperf_sockets_${pod}`)).toEqual([]);
        expect((vm.json(`iperf_summary_${pod}`) as Summary).summary).toMatchObject({
          sockets: 0,
          plainTcp: 2,
        });
      }
      expect(Number(r.rdma_sent_pkts)).toBe(0);
    });

    if (mechanism === 'preload') {
      it('a static binary in an SMC-R pod stays on TCP under preload, and the summary counts it as plain TCP', () => {
        for (const pod of ['a', 'b']) {
          expect(active(`static_sockets_${pod}`)).toEqual([]);
          expect((vm.json(`static_summary_${pod}`) as Summary).summary).toMatchObject({
            sockets: 0,
            plainTcp: 1,
          });
        }
      });
    } else {
      it('a static binary in an SMC-R pod runs SMC-R too: the BPF program needs no loader', () => {
        for (const pod of ['a', 'b']) {
          const socks = active(`static_sockets_${pod}`);
          expect(socks).toHaveLength(1);
          expect(socks[0]).toMatchObject({ mode: 'SMCR' });
          expect((vm.json(`static_summary_${pod}`) as Summary).summary.plainTcp).toBe(0);
        }
      });

      it('CHECK passes while switched on; DEL switches the pod netns off; unloading leaves no pin and CHECK reports it', () => {
        expect(vm.find((x) => 'check_a' in x).check_a).toBe('0');
        expect(vm.find((x) => 'del_a' in x).del_a).toBe('0');
        const drift = vm.find((x) => 'check_b_after_unload' in x);
        expect(drift.check_b_after_unload).toBe('1');
        expect(drift.check_b_out).toMatch(/code:101.*no longer switches this netns/);
        const state = vm.json('state_a') as { bpf: { cookie: string } };
        const after = vm.json('bpf_status_after_del') as { netns: { cookie: number }[] };
        expect(after.netns).toHaveLength(1);
        expect(after.netns.map((n) => String(n.cookie))).not.toContain(state.bpf.cookie);
        // Unloaded: no pins, and the plugin's switch says the program is not there.
        const unload = vm.find((x) => 'bpf_after_unload' in x);
        expect(unload.bpf_after_unload).toBe('gone');
        expect(unload.switched_off).toMatch(/not_loaded/);
      });
    }
  },
);
