// "No change to the application", shown with programs we did not write, from Debian's packages and
// unmodified, in pods set up by our CNI chain: iperf3, busybox's nc (static), CPython's http.server
// and a urllib client, redis-server with redis-benchmark, Node.js (node:http), and a Go program built
// static with the standard library only (ours: test/smcr-vm/runtimes/http.go). They open their
// sockets as their runtimes do: Go always with SOCK_NONBLOCK|SOCK_CLOEXEC, CPython and libuv with
// SOCK_CLOEXEC, hiredis with IPPROTO_TCP. test/smcr-vm/transparent.sh runs in the VM.
// - trixie's 6.12 kernel: the mechanism found is the IPPROTO_SMC BPF program, loaded and pinned by
//   our plugin at the first annotated pod's ADD (the VM has just booted: bpffs is empty, as on a node
//   after a reboot), then replaced by the agent's load (an upgrade) while a program opens sockets.
// - Debian's newest line (7.x, trixie-backports), built by us from its linux-source with SMC on
//   (Debian's own build has none: test/smcr-vm/newest.sh): the same BPF path; SMC is built in there,
//   so no module loads at the first ADD.
// - bookworm's 6.1 kernel: AF_SMC only, so the preload library, given to the annotated pods as the
//   webhook does (LD_PRELOAD); static programs (busybox's nc, the Go program) stay on TCP, and the
//   summary counts them as plain TCP.
// Every case: both ends listed in mode SMCR on the pod's RDMA device while the client runs, SMC's
// own counters in each netns counting the connections with no fallback, the RDMA packets moving;
// and the same programs between two pods without the annotation staying on TCP (the negative
// control).
import { beforeAll, describe, expect, it } from 'vitest';
import { requires, root } from '../helpers/requires.js';
import { bootVm, type VmRun } from '../helpers/vm.js';
import {
  expectRanEveryStep,
  expectTcp,
  RUNTIMES,
  statsDelta,
  type BpfStatus,
  type SockLoop,
  type Socket,
  type Stats,
  type Summary,
} from '../helpers/vm-pods.js';

const skip = requires('the transparent SMC-R kernel test (apt-get, qemu)', root) !== '';

const KERNELS = [
  { kernel: 'trixie', release: /^6\.12\./, mechanism: 'bpf', smcModule: true, smcMode: 'SMCR' },
  // 7.x has loopback-ism (DIBS_LO): the handshake prefers SMC-D between the VM's pods, whose
  // SMC-R the other two kernels show.
  { kernel: 'newest', release: /^7\./, mechanism: 'bpf', smcModule: false, smcMode: 'SMCD' },
  {
    kernel: 'bookworm',
    release: /^6\.1\./,
    mechanism: 'preload',
    smcModule: true,
    smcMode: 'SMCR',
  },
] as const;

describe.skipIf(skip).each(KERNELS)(
  'unmodified programs run SMC-R on $kernel ($mechanism)',
  ({ kernel, release, mechanism, smcModule, smcMode }) => {
    let vm: VmRun;

    beforeAll(async () => {
      // The runtimes' cases take about two minutes under TCG.
      vm = await bootVm({ kernel, append: 'smcr_scenario=transparent', watchdogSec: 420 });
      console.log(`transparent SMC-R on ${kernel}: VM run ${vm.summary}`);
    }, 40 * 60_000);

    const tech = smcMode === 'SMCD' ? 'smcd' : 'smcr';
    /** One end of an SMC connection between the pods: SMC-R on its RDMA device, or SMC-D. */
    const smcEnd = (pod: string, role: string): Record<string, unknown> =>
      smcMode === 'SMCR' ? { mode: 'SMCR', link: { dev: `rxe_${pod}`, role } } : { mode: 'SMCD' };
    const active = (key: string): Socket[] =>
      (vm.json(key) as Socket[]).filter((s) => s.state !== 'LISTEN');

    it('the VM ran every step on the kernel asked for', () => {
      expectRanEveryStep(vm, release);
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
        // The three annotated pods' netns (a, b, n), and only them, are switched on.
        expect(bpf.loaded).toBe(true);
        expect(bpf.netns).toHaveLength(3);
        expect(bpf.netns.map((n) => String(n.cookie))).toContain(
          (state.bpf as { cookie: string }).cookie,
        );
      } else {
        expect(bpf).toMatchObject({ loaded: false, netns: [] });
      }
    });

    it('every way a program opens a TCP socket becomes SMC in an SMC-R pod, and none in a pod without', () => {
      // Both families, every SOCK_NONBLOCK/SOCK_CLOEXEC combination, protocol 0 and IPPROTO_TCP.
      const on = vm.json('sockloop_a') as SockLoop;
      expect(on.combos).toHaveLength(16);
      expect(on).toMatchObject({ failed: 0, tcp: 0, sockets: 48, smc: 48 });
      for (const c of on.combos) expect(c, JSON.stringify(c)).toMatchObject({ smc: 3, tcp: 0 });
      const off = vm.json('sockloop_c') as SockLoop;
      expect(off).toMatchObject({ failed: 0, smc: 0, tcp: 48 });
    });

    // #79: an Alpine image's programs link musl, whose loader takes the glibc-built library too
    // (it answers for libc.so.6 itself): under preload its sockets become SMC as glibc's do.
    it('a musl program (as in an Alpine image) gets SMC sockets the same way', () => {
      expect(vm.json('sockloop_musl_a')).toMatchObject({ failed: 0, tcp: 0, sockets: 48, smc: 48 });
    });

    // #79 item 4: native/test/preload_threads.c, the library compiled in, under ThreadSanitizer.
    // Here AF_SMC opens, so the racing threads' sockets are SMC sockets and SO_REUSEPORT swaps them
    // (on this machine, with no SMC, `make check` runs the same test on TCP sockets).
    it("the library's threads, fork and vfork test passes under ThreadSanitizer where AF_SMC opens", () => {
      const value = (key: string): string | undefined => vm.find((r) => r[key] !== undefined)[key];
      const said = vm.consoleText
        .split('\n')
        .filter((l) => /preload_threads|FAIL: |skip: |ThreadSanitizer|SUMMARY|#\d+ /.test(l))
        .slice(0, 80)
        .join('\n');
      expect(value('preload_threads_rc'), said).toBe('0');
      expect(value('preload_threads')).toBe('4 checks, 0 failed');
    });

    // #85: the swap of loopback connects to plain TCP went (bench smc-loopback: no faster).
    // Where loopback-ism serves lo (7.x) they are SMC-D instead: test/vm/smcd.test.ts.
    if (smcMode === 'SMCR')
      it("the preload library leaves loopback connects SMC sockets: each falls back and works, Node.js's and asyncio's too, and the summary counts them apart as loopback fallbacks", () => {
        // No RDMA device serves lo: a loopback connect through SMC falls back (0x03030000).
        // AF_INET is 2, AF_SMC 43.
        const line = (key: string): Record<string, string> =>
          Object.fromEntries(
            (vm.find((r) => r[key] !== undefined)[key] ?? '').split(' ').map((kv) => kv.split('=')),
          );
        /** Client-side fallbacks for "no SMC device" (lo) counted in pod c's SMC statistics. */
        const noDevice = (key: string): number =>
          (
            vm.json(key) as {
              fallbacks: { reasons: { side: string; reason: string; count: number }[] };
            }
          ).fallbacks.reasons
            .filter((r) => r.side === 'client' && r.reason === '0x03030000')
            .reduce((n, r) => n + r.count, 0);
        const fellBack = (from: string, to: string): number => noDevice(to) - noDevice(from);
        const value = (key: string): string | undefined =>
          vm.find((r) => r[key] !== undefined)[key];
        // Opened AF_SMC; once fallen back, an SMC socket answers SO_DOMAIN from its TCP socket (2),
        // so `after` says nothing: the statistics below count the three that went through SMC.
        expect(line('loopback_preload')).toMatchObject({
          before: '43',
          nodelay: '1',
          cloexec: '1',
          data: 'ok',
          nbdata: 'ok',
          epoll: 'writable',
        });
        expect(fellBack('loopback_stats_0', 'loopback_stats_1')).toBe(3);
        // Read while the three were open: loopback fallbacks, none among the reasons (no Event).
        // `smc summary --netns` answers one line per netns: {"netns":..., "summary":{...}}.
        const { summary } = vm.json('loopback_summary') as {
          summary: {
            byMode: { TCP: number };
            loopbackFallbacks: number;
            fallbacks: Record<string, number>;
          };
        };
        expect(summary.loopbackFallbacks).toBeGreaterThanOrEqual(3);
        expect(summary.byMode.TCP).toBeGreaterThanOrEqual(summary.loopbackFallbacks);
        expect(summary.fallbacks).toEqual({});
        expect(value('loopback_node')).toBe('ok');
        expect(fellBack('loopback_rt_0', 'loopback_rt_1')).toBe(3);
        expect(value('loopback_asyncio')).toBe('ok');
        expect(fellBack('loopback_rt_1', 'loopback_rt_2')).toBe(3);
      });

    // #88: how a server's stop of its accept loop behaves on each mechanism's listener, against
    // plain TCP in the same boot (test/smcr-vm/listen-stop.c).
    it("a listener's shutdown() wakes accept() on TCP and not on SMC; close() wakes neither; epoll sees the TCP listener's shutdown only", () => {
      const rows = vm.lines
        .filter((l) => l.stop !== undefined || (l.mech !== undefined && l.call !== undefined))
        .map((l) => ({
          mech: l.mech!,
          mode: l.mode!,
          sock: l.sock,
          rc: l.rc,
          errno: l.errno,
          woke: l.woke,
          wakeErrno: l.wake_errno,
          events: l.events,
        }));
      console.log(
        `listener stop on ${kernel}:\n${rows.map((r) => `  ${r.mech} ${r.mode}: sock=${r.sock} rc=${r.rc} errno=${r.errno} woke=${r.woke} wake_errno=${r.wakeErrno} events=${r.events}`).join('\n')}`,
      );
      const mechs = mechanism === 'bpf' ? ['tcp', 'bpf', 'preload'] : ['tcp', 'preload'];
      expect([...new Set(rows.map((r) => r.mech))]).toEqual(mechs);
      const at = (mech: string, mode: string): (typeof rows)[number] | undefined =>
        rows.find((r) => r.mech === mech && r.mode === mode);
      // The baseline, as inet_shutdown() does it: the listener disconnected, accept() woken.
      expect(at('tcp', 'shutdown')).toMatchObject({
        sock: 'tcp',
        rc: '0',
        woke: '1',
        wakeErrno: 'EINVAL',
      });
      expect(at('tcp', 'close')).toMatchObject({ rc: '0', woke: '0' });
      expect(at('tcp', 'epoll')).toMatchObject({ rc: '0', woke: '1', events: '0x10' });
      const sockOf: Record<string, string> = { bpf: 'ipproto_smc', preload: 'af_smc' };
      for (const m of mechs.slice(1)) {
        expect(at(m, 'shutdown')?.sock).toBe(sockOf[m]);
        // smc_shutdown() (net/smc/af_smc.c) refuses a listener: ENOTCONN, accept() stays blocked.
        expect(at(m, 'shutdown')).toMatchObject({ rc: '-1', errno: 'ENOTCONN', woke: '0' });
        expect(at(m, 'close')).toMatchObject({ rc: '0', woke: '0' });
        expect(at(m, 'epoll')).toMatchObject({ rc: '-1', errno: 'ENOTCONN', woke: '0' });
      }
    });

    // #88 item 3: the servers we ship stop gracefully on each mechanism's listener as on TCP's:
    // none of them stops its accept loop with shutdown(); each closes its listener from its event
    // loop (Go's poller, asyncio's and Node's loops, redis's ae) or polls a flag (socketserver).
    it("Go's, CPython's (socketserver, asyncio), Node's and redis's graceful stops end on every mechanism as on TCP", () => {
      const rows = vm.lines
        .filter((l) => l.prog !== undefined && l.mech !== undefined)
        .map((l) => ({
          mech: l.mech!,
          prog: l.prog!,
          stopped: l.stopped,
          ms: Number(l.ms),
          ready: l.ready_ms,
          why: [l.why, l.redis_log].filter(Boolean).join(': '),
        }));
      console.log(
        `graceful stops on ${kernel}:\n${rows.map((r) => `  ${r.mech} ${r.prog}: stopped=${r.stopped ?? 'no answer'} in ${r.ms} ms${r.ready ? ` (ready ${r.ready} ms after start)` : ''}${r.why ? ` (${r.why})` : ''}`).join('\n')}`,
      );
      const mechs = mechanism === 'bpf' ? ['tcp', 'bpf', 'preload'] : ['tcp', 'preload'];
      const progs = ['go', 'socketserver', 'asyncio', 'node', 'redis'];
      expect(rows.map((r) => `${r.mech} ${r.prog}`)).toEqual(
        mechs.flatMap((m) => progs.map((p) => `${m} ${p}`)),
      );
      for (const r of rows) {
        expect(r.stopped, `${r.mech} ${r.prog} ${r.why}`).toBe('yes');
        // socketserver's serve_forever() polls its flag every 0.5 s: well inside 10 s on each.
        expect(r.ms, `${r.mech} ${r.prog}`).toBeLessThan(5000);
      }
    });

    it(
      mechanism === 'bpf'
        ? 'an annotated pod given no preload library gets the IPPROTO_SMC program'
        : 'an annotated pod given no preload library has no mechanism, and its record says why',
      () => {
        const n = vm.json('state_n') as {
          mechanism: string;
          mechanismWhy?: string;
          warnings: string[];
        };
        if (mechanism === 'bpf') {
          expect(n).toMatchObject({ mechanism: 'bpf', outcome: 'applied' });
          expect(n.mechanismWhy).toBeUndefined();
        } else {
          expect(n.mechanism).toBe('none');
          expect(n.mechanismWhy).toMatch(/no preload library given.*no IPPROTO_SMC sockets/);
          expect(n.warnings.join()).toMatch(/no SMC mechanism was active at ADD/);
        }
      },
    );

    for (const runtime of RUNTIMES) {
      const stays = mechanism === 'preload' && runtime.static;
      it(
        stays
          ? `${runtime.name} stays on TCP in an SMC-R pod (static: nothing to preload), counted as plain TCP`
          : `${runtime.name} runs SMC-R on both ends, over RDMA; without the annotation it stays on TCP`,
        () => {
          const key = runtime.key;
          const r = vm.find((x) => x.runtime === `${key}_a`);
          expect(r.rc, r.client).toBe('0');
          expect(r.client).toMatch(runtime.output);
          if (stays) {
            expectTcp(vm, `${key}_a`, 'a', 'b', runtime.conns);
            expect(Number(r.rdma_sent_pkts)).toBe(0);
          } else {
            for (const [pod, role] of [
              ['a', 'client'],
              ['b', 'server'],
            ] as const) {
              const socks = active(`${key}_a_sockets_${pod}`);
              expect(socks.length, `${key} in ${pod}`).toBeGreaterThanOrEqual(runtime.conns);
              for (const sk of socks) expect(sk).toMatchObject(smcEnd(pod, role));
              expect((vm.json(`${key}_a_summary_${pod}`) as Summary).summary).toMatchObject({
                byMode: { TCP: 0 },
                plainTcp: 0,
              });
              // SMC's own counters in the pod's netns: the connections made it, none fell back.
              const d = statsDelta(vm, `${key}_a`, pod, tech);
              expect(d.fallbacks, `${key} in ${pod}`).toBe(0);
              expect(d.successes).toBeGreaterThanOrEqual(runtime.conns);
              expect(d.bytes).toBeGreaterThan(0);
            }
            if (smcMode === 'SMCR') expect(Number(r.rdma_sent_pkts)).toBeGreaterThan(50);
          }
          // The negative control: the same programs between pods without the annotation.
          const c = vm.find((x) => x.runtime === `${key}_c`);
          expect(c.rc, c.client).toBe('0');
          expect(c.client).toMatch(runtime.output);
          expectTcp(vm, `${key}_c`, 'c', 'd', runtime.conns);
          expect(Number(c.rdma_sent_pkts)).toBe(0);
        },
      );
    }

    if (mechanism === 'preload') {
      it("the agent's reading names the static Go program on both ends as static: nothing to preload", () => {
        for (const pod of ['a', 'b']) {
          const programs = vm.json(`go_a_programs_${pod}`) as { comm: string; cause: string }[];
          expect(programs, pod).toEqual([
            expect.objectContaining({ comm: 'go-http', cause: 'static', connections: 1 }),
          ]);
        }
      });

      it('a launcher that clears LD_PRELOAD leaves CPython on TCP: the agent says so, and the SMC server sees a peer without SMC', () => {
        const r = vm.find((x) => x.runtime === 'pycleared_a');
        expect(r.rc, r.client).toBe('0');
        expect(r.client).toMatch(/got 12582912 bytes/);
        expect(vm.json('pycleared_a_programs_a')).toEqual([
          expect.objectContaining({ comm: 'python3', cause: 'cleared', connections: 1 }),
        ]);
        // The server loaded the library: nothing of it is plain TCP.
        expect(vm.json('pycleared_a_programs_b')).toEqual([]);
        // Its SMC socket fell back: PEERNOSMC, the peer is not SMC-R capable (no SMC option in
        // its SYN), as SMC's own counters in its netns say.
        const after = vm.json('pycleared_a_stats_after_b') as Stats;
        expect(statsDelta(vm, 'pycleared_a', 'b')).toMatchObject({ successes: 0, fallbacks: 1 });
        expect(after.fallbacks.reasons).toContainEqual(
          expect.objectContaining({ side: 'server', reason: '0x03010000' }),
        );
      });
    }

    if (mechanism === 'bpf') {
      it("after a reboot (bpffs empty, no agent yet), the first SMC-R pod's ADD loads and pins the program itself", () => {
        expect(vm.json('bpf_before_add')).toMatchObject({ loaded: false, netns: [] });
        // Nor was smc loaded: the plugin's first IPPROTO_SMC socket made the kernel load it (where
        // smc is a module; built in, there is nothing to load).
        if (smcModule) {
          expect(vm.find((x) => 'smc_before_add' in x).smc_before_add).toBe('absent');
          expect(vm.find((x) => 'smc_after_add' in x).smc_after_add).toBe('loaded');
        }
        expect(vm.json('state_a')).toMatchObject({ mechanism: 'bpf', outcome: 'applied' });
        const pinned = vm.json('upgrade_before') as BpfStatus;
        expect(pinned).toMatchObject({ loaded: true, progId: expect.any(Number) });
      });

      it('where the program cannot be pinned, ADD fails with "try again later" (11) instead of a pod on TCP', () => {
        const r = vm.find((x) => 'try_again_rc' in x);
        expect(r.try_again_rc).toBe('1');
        expect(vm.json('try_again')).toMatchObject({
          code: 11,
          msg: expect.stringMatching(/could not be loaded .*is bpffs mounted.*try again later/),
        });
      });

      it('an upgrade replaces the program, keeps every pod switched on, and leaves no socket on TCP meanwhile', () => {
        const before = vm.json('upgrade_before') as BpfStatus;
        const after = vm.json('upgrade_after') as BpfStatus;
        expect(after.loaded).toBe(true);
        expect(after.progId).not.toBe(before.progId);
        expect(after.tag).toMatch(/^[0-9a-f]{16}$/);
        const cookies = (s: BpfStatus): string[] => s.netns.map((n) => String(n.cookie)).sort();
        expect(cookies(after)).toEqual(cookies(before));
        // A program opening sockets in a loop all through three loads: every one was SMC.
        const loop = vm.json('upgrade_loop') as SockLoop;
        expect(loop).toMatchObject({ tcp: 0, failed: 0 });
        expect(loop.sockets).toBeGreaterThan(1000);
        expect(loop.smc).toBe(loop.sockets);
      });
    }

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
        for (const s of socks) expect(s).toMatchObject(smcEnd(pod, role));
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
      if (smcMode === 'SMCR') expect(Number(r.rdma_sent_pkts)).toBeGreaterThan(1000);
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
          expect(socks[0]).toMatchObject({ mode: smcMode });
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
        expect(after.netns).toHaveLength(2);
        expect(after.netns.map((n) => String(n.cookie))).not.toContain(state.bpf.cookie);
        // Unloaded: no pins, and the plugin's switch says the program is not there.
        const unload = vm.find((x) => 'bpf_after_unload' in x);
        expect(unload.bpf_after_unload).toBe('gone');
        expect(unload.switched_off).toMatch(/not_loaded/);
      });
    }
  },
);
