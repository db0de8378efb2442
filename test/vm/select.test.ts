// The SMC selection (#93): an SMC-R pod's connection uses SMC only when its destination is in the
// cluster's networks and its port is selected; every other one is plain TCP from its first packet,
// its SYN without SMC's option. test/smcr-vm/select.sh runs in the VM, on each kernel with the
// mechanism it has:
// - bookworm's 6.1: the preload library, given ERDMA_SMCR_SELECT as the webhook sets it;
// - Debian's newest line (7.x, built by test/smcr-vm/newest.sh with SMC on): the IPPROTO_SMC
//   program with our smc_hs_ctrl, the selection handed to it by our CNI plugin (static programs too);
// - trixie's 6.12: IPPROTO_SMC without smc_hs_ctrl, where the selection cannot be enforced, and the
//   plugin's record (the pod's Event) says so.
// The negative control is Alibaba's FAQ failure, reproduced: a server outside the cluster replays
// SMC's TCP option in its SYN-ACK (a sockops program, test/smcr-vm/replay-option.bpf.c); an
// annotated pod without a selection cannot fetch from it, where a plain pod can. tcpdump shows which
// SYN carried the option (tcpdump prints it "exp-e2d4").
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { requires, root } from '../helpers/requires.js';
import { bootVm, type VmRun } from '../helpers/vm.js';
import { kubeProxyMissing, kubeProxyServiceRules } from '../harness/k8s/kube-proxy-rules.js';
import { expectRanEveryStep, statsDelta, type Socket, type Summary } from '../helpers/vm-pods.js';

const skip = requires('the SMC selection VM test (apt-get, qemu)', root) !== '';

// smcMode: what a selected connection between the two pods of the VM runs. The newest kernel has
// loopback-ism (DIBS_LO), and the CLC handshake prefers SMC-D between pods of one kernel.
// nodeEnforces: what `erdma-smcr mechanisms` says of the node (its first mechanism's), whatever
// mechanism the pods use. append: more of the kernel's command line for select.sh.
// service: the VM loads a real kube-proxy's rules for a Service (nftables: 7.x built in, 6.1's
// modules in the VM; 6.12's VM carries none: its bpf pods do not enforce the selection, and its
// preload pods decide as 6.1's do).
const KERNELS = [
  {
    kernel: 'newest',
    release: /^7\./,
    mechanism: 'bpf',
    enforced: true,
    smcMode: 'SMCD',
    service: true,
    nodeEnforces: true,
    append: '',
  },
  {
    kernel: 'bookworm',
    release: /^6\.1\./,
    mechanism: 'preload',
    enforced: true,
    smcMode: 'SMCR',
    service: true,
    nodeEnforces: true,
    append: '',
  },
  {
    kernel: 'trixie',
    release: /^6\.12\./,
    mechanism: 'bpf',
    enforced: false,
    smcMode: 'SMCR',
    service: false,
    nodeEnforces: false,
    append: '',
  },
  // The same kernel with pods annotated smcr.erdma.io/mechanism: preload: the library enforces
  // the selection where the node's own mechanism (the probe's) cannot.
  {
    kernel: 'trixie',
    release: /^6\.12\./,
    mechanism: 'preload',
    enforced: true,
    smcMode: 'SMCR',
    service: false,
    nodeEnforces: false,
    // And Alibaba's tcp2smc knob standing in while the pods are added (#100): the node the agent
    // labels preload on Alibaba Cloud Linux 3, where the knob is there too.
    append: 'smcr_select_mech=preload smcr_tcp2smc_standin=1',
  },
] as const;

// The Service: its ClusterIP in the selection's serviceNetworks (select.sh's SEL_A), its one
// endpoint pod b (the second pod select.sh adds on the bridge's 10.88.0.0/24), ports 7003 (selected
// by a and b) and 7056 (excluded by a).
const SERVICE = {
  serviceCidr: '10.96.0.0/16',
  clusterIp: '10.96.0.10',
  ports: [7003, 7056],
  endpointIp: '10.88.0.3',
  podCidr: '10.88.0.0/24',
} as const;
const noKubeProxy = skip
  ? 'skipped'
  : requires("a Service through a real kube-proxy's rules", kubeProxyMissing);

/** The apps of test/smcr-vm/apps.sh, each one result line per selection. */
const APPS = [
  'curl',
  'asyncio',
  'node',
  'proxy_plain',
  'proxy_pool',
  'proxy_bind',
  'haproxy',
  'redis_cli',
  'redis_replica',
  'psql',
] as const;

/** SMC's TCP option as tcpdump prints it (kind 254, ExID 0xE2D4...). */
const SMC_OPTION = 'exp-e2d4';

interface SelectStatus {
  select?: {
    registered: boolean;
    netns: { cookie: number; kept: number; selected: number }[];
  };
}

describe.skipIf(skip).each(KERNELS)(
  'the SMC selection on $kernel ($mechanism)',
  ({ kernel, release, mechanism, enforced, smcMode, service, nodeEnforces, append }) => {
    let vm: VmRun;
    beforeAll(async () => {
      const files: Record<string, string> = {};
      if (service && noKubeProxy === '') {
        const rules = await kubeProxyServiceRules(SERVICE);
        console.log(`the Service's rules, by ${rules.version} in nftables mode:\n${rules.table}`);
        files['kube-proxy.nft'] = rules.table;
      }
      vm = await bootVm({
        kernel,
        append: `smcr_scenario=select ${append}`.trim(),
        watchdogSec: 900,
        files,
        // ERDMA_SMCR_VM_CONSOLE=DIR keeps each boot's console there, to read after a failure.
        ...(process.env.ERDMA_SMCR_VM_CONSOLE
          ? {
              consoleFile: `${process.env.ERDMA_SMCR_VM_CONSOLE}/select-${kernel}-${mechanism}.log`,
            }
          : {}),
      });
      console.log(`SMC selection on ${kernel}: VM run ${vm.summary}`);
      for (const c of ['ext', 'b'])
        for (const r of vm.lines.filter((x) => `syn_${c}` in x))
          console.log(`  syn seen in ${c}: ${r[`syn_${c}`]}`);
    }, 40 * 60_000);

    const ip = (pod: string): string =>
      vm.find((r) => r.pod === pod && r.ip !== undefined).ip as string;
    /** The SYNs (and SYN-ACKs) captured in `where` from `src` to `dst`, on ports [low, high]. */
    const syns = (where: string, src: string, dst: string, ports?: [number, number]): string[] =>
      vm.lines
        .map((r) => r[`syn_${where}`])
        .filter((l): l is string => l !== undefined)
        .filter((l) => {
          const m = / IP ([\d.]+)\.\d+ > ([\d.]+)\.(\d+):/.exec(l);
          if (!m || m[1] !== src || m[2] !== dst) return false;
          const port = Number(m[3]);
          return !ports || (port >= ports[0] && port <= ports[1]);
        });
    const active = (label: string, pod: string): Socket[] =>
      (vm.json(`${label}_sockets_${pod}`) as Socket[]).filter((s) => s.state !== 'LISTEN');
    const outside = (label: string): Record<string, string> => vm.find((r) => r.outside === label);

    it('the VM ran every step on the kernel asked for, with the mechanism expected', () => {
      expectRanEveryStep(vm, release);
      expect(vm.find((r) => 'mechanism' in r).mechanism).toBe(mechanism);
      const probe = vm.json('mechanisms') as { selection: { ok: boolean; why?: string } };
      expect(probe.selection.ok).toBe(nodeEnforces);
    });

    it("reproduces the FAQ's failure: an annotated pod without a selection cannot fetch from a server that replays SMC's option; a plain pod can", () => {
      expect(outside('plain')).toMatchObject({ rc: '0' });
      expect(outside('plain').out).toMatch(/got 4194304 bytes/);
      // The negative control: SMC starts its handshake with a peer that only echoed the option.
      expect(outside('unselected').rc).not.toBe('0');
      expect(outside('unselected').out).not.toMatch(/got \d+ bytes/);
      const u = syns('ext', ip('u'), '10.99.0.10', [8080, 8080]);
      expect(u.length).toBeGreaterThan(0);
      expect(u.some((l) => l.includes('Flags [S]') && l.includes(SMC_OPTION))).toBe(true);
      // The server's SYN-ACK to the plain pod carries it too: the replay is the server's, for all.
      expect(
        syns('ext', '10.99.0.10', ip('p')).some(
          (l) => l.includes('Flags [S.]') && l.includes(SMC_OPTION),
        ),
      ).toBe(true);
    });

    if (append.includes('smcr_tcp2smc_standin=1'))
      it('with the tcp2smc knob there (a stand-in: no Debian kernel has it), the pods given the library run under it and the knob stays 0 (#100)', () => {
        const knob = (key: string): string | undefined => vm.find((r) => key in r)[key];
        expect(knob('standin_knob_before')).toBe('0');
        expect(knob('standin_knob')).toBe('0');
        for (const x of ['a', 'b', 'u'])
          expect(vm.json(`state_${x}`), x).toMatchObject({ mechanism: 'preload' });
        expect(vm.json('state_a')).toMatchObject({ selection: 'enforced' });
      });

    if (enforced) {
      it('the pod with a selection reaches that server: its SYN to an address outside the cluster carries no SMC option', () => {
        expect(vm.json(`state_a`)).toMatchObject({ mechanism, selection: 'enforced' });
        expect(outside('selected')).toMatchObject({ rc: '0' });
        expect(outside('selected').out).toMatch(/got 4194304 bytes/);
        const a = syns('ext', ip('a'), '10.99.0.10', [8080, 8080]).filter((l) =>
          l.includes('Flags [S]'),
        );
        expect(a.length).toBeGreaterThan(0);
        for (const l of a) expect(l).not.toContain(SMC_OPTION);
      });

      it('a selected port runs SMC at both ends (SMC-D where the kernel has loopback-ism, else SMC-R over RDMA)', () => {
        for (const pod of ['a', 'b']) {
          const socks = active('sel_py', pod);
          expect(socks.length, `sel_py in ${pod}`).toBeGreaterThan(0);
          expect(
            socks.every((s) => s.mode === smcMode),
            JSON.stringify(socks),
          ).toBe(true);
        }
        const tech = smcMode === 'SMCD' ? 'smcd' : 'smcr';
        expect(statsDelta(vm, 'sel_py', 'a', tech).successes).toBeGreaterThanOrEqual(1);
        expect(vm.find((r) => r.runtime === 'sel_py').client).toMatch(/got 4194304 bytes/);
      });

      it('a port the client excludes is plain TCP from its first packet: no SMC option in its SYN, no SMC at either end', () => {
        for (const label of ['excl_py', 'excl_go']) {
          expect(vm.find((r) => r.runtime === label).rc, label).toBe('0');
          for (const pod of ['a', 'b'])
            expect(
              active(label, pod).filter((s) => s.mode !== 'TCP'),
              `${label} in ${pod}`,
            ).toEqual([]);
          for (const tech of ['smcr', 'smcd'] as const)
            expect(statsDelta(vm, label, 'a', tech).successes).toBe(0);
        }
        // The summary counts them apart, by the pod's selection: neither a fallback nor plain TCP.
        for (const label of ['excl_py', 'excl_go']) {
          const sum = (
            vm.json(`${label}_summary_a`) as {
              summary: Summary['summary'] & {
                selectionKept: number;
                fallbacks: Record<string, number>;
              };
            }
          ).summary;
          expect(sum.selectionKept, label).toBeGreaterThanOrEqual(1);
          expect(sum.fallbacks, label).toEqual({});
          expect(sum.plainTcp, label).toBe(0);
        }
        const excluded = syns('b', ip('a'), ip('b'), [7050, 7059]).filter((l) =>
          l.includes('Flags [S]'),
        );
        expect(excluded.length).toBeGreaterThanOrEqual(2);
        for (const l of excluded) expect(l).not.toContain(SMC_OPTION);
        // The selected port's SYN, in the same capture, carries it: the capture sees the option.
        expect(syns('b', ip('a'), ip('b'), [7001, 7001]).some((l) => l.includes(SMC_OPTION))).toBe(
          true,
        );
      });

      it('a port the server does not listen with SMC on: its SYN-ACK carries no SMC option, and the connection is TCP', () => {
        expect(vm.find((r) => r.runtime === 'nolisten_py').rc).toBe('0');
        const synack = syns('b', ip('b'), ip('a')).filter(
          (l) => l.includes('Flags [S.]') && l.includes(`${ip('b')}.7060 >`),
        );
        expect(synack.length).toBeGreaterThan(0);
        for (const l of synack) expect(l).not.toContain(SMC_OPTION);
        for (const pod of ['a', 'b'])
          expect(active('nolisten_py', pod).filter((s) => s.mode !== 'TCP')).toEqual([]);
      });
    }

    if (enforced) {
      // test/smcr-vm/apps.sh (#99): each app's output and which of its connections ran SMC, with
      // the selection as the webhook writes it (sel: sc -> ss, every port) and with the apps' ports
      // excluded (exc: xc -> xs).
      const md5 = (text: string): string => createHash('md5').update(text).digest('hex');
      const psqlOut = Array.from({ length: 20_000 }, (_, i) => md5(String(i + 1))).join('') + '\n';
      const expected = (tag: string, app: (typeof APPS)[number]): string => {
        if (app === 'redis_cli' || app === 'redis_replica')
          return vm.find((r) => `${tag}_redis_value` in r)[`${tag}_redis_value`] as string;
        if (app === 'psql') return md5(psqlOut);
        if (app.startsWith('proxy_')) return vm.find((r) => 'blob3_md5' in r).blob3_md5 as string;
        return vm.find((r) => 'blob_md5' in r).blob_md5 as string;
      };
      const result = (tag: string, app: string): Record<string, string> =>
        vm.find((r) => r.app === `${tag}_${app}`) as Record<string, string>;

      it.each(['sel', 'exc'])(
        'nginx (its default server and as a reverse proxy: per request, a keepalive pool, proxy_bind), HAProxy, redis and a replica, PostgreSQL and psql, curl, asyncio and Node.js deliver the same bytes as without the library (%s)',
        (tag) => {
          expect(vm.find((r) => 'apps' in r).apps).toBe('ran');
          for (const app of APPS) {
            const r = result(tag, app);
            // The servers' own words, for a failure's message.
            const servers = vm.lines
              .flatMap((l) => Object.entries(l))
              .filter(([k]) =>
                /^(sel|exc)_(nginx_server|proxy_err|redis_server|postgres_server)$/.test(k),
              )
              .map(([k, v]) => `${k}: ${v}`)
              .join('\n');
            expect(r.md5, `${tag} ${app}: ${r.out}\n${servers}`).toBe(expected(tag, app));
            expect(r.rc, `${tag} ${app}: ${r.out}\n${servers}`).toBe('0');
          }
          const err = vm.find((r) => `${tag}_nginx_server` in r)[`${tag}_nginx_server`] as string;
          expect(err).not.toMatch(/Address already in use/);
        },
      );

      it('with the selection as the webhook writes it, every app connection across the pods runs SMC, and its SYN carries the option', () => {
        const tech = smcMode === 'SMCD' ? 'smcd' : 'smcr';
        for (const app of APPS)
          expect(statsDelta(vm, `sel_${app}`, 'sc', tech).successes, app).toBeGreaterThanOrEqual(1);
        // The pool's upstream connection is made once and reused; per-request upstreams, three.
        expect(statsDelta(vm, 'sel_proxy_plain', 'sc', tech).successes).toBeGreaterThanOrEqual(3);
        for (const port of [80, 5432, 6379]) {
          const s = syns('ss', ip('sc'), ip('ss'), [port, port]).filter((l) =>
            l.includes('Flags [S]'),
          );
          expect(s.length, `SYNs to ss:${port}`).toBeGreaterThan(0);
          for (const l of s) expect(l).toContain(SMC_OPTION);
        }
      });

      it('with their ports excluded, the same apps run plain TCP from the first packet: no SMC option in any SYN, no SMC handshake', () => {
        for (const app of APPS)
          for (const tech of ['smcr', 'smcd'] as const)
            expect(statsDelta(vm, `exc_${app}`, 'xc', tech).successes, app).toBe(0);
        const s = syns('xs', ip('xc'), ip('xs')).filter((l) => l.includes('Flags [S]'));
        expect(s.length).toBeGreaterThanOrEqual(APPS.length);
        for (const l of s) expect(l).not.toContain(SMC_OPTION);
      });
    }

    if (enforced && mechanism === 'bpf') {
      it('the in-kernel selection reaches a static program: Go runs SMC on a selected port', () => {
        for (const pod of ['a', 'b']) {
          const socks = active('sel_go', pod);
          expect(socks.length).toBeGreaterThan(0);
          expect(
            socks.every((s) => s.mode === smcMode),
            JSON.stringify(socks),
          ).toBe(true);
        }
      });

      it("our smc_hs_ctrl counts each pod's decisions, and DEL takes the pod's selection out", () => {
        const before = vm.json('bpf_status_after') as SelectStatus;
        expect(before.select?.registered).toBe(true);
        const cookie = Number((vm.json('state_a') as { bpf: { cookie: string } }).bpf.cookie);
        const mine = before.select?.netns.find((n) => n.cookie === cookie);
        expect(mine?.kept).toBeGreaterThanOrEqual(4); // the outside fetch, 7050, 7055, the Service's 7056
        expect(mine?.selected).toBeGreaterThanOrEqual(2); // 7001, 7002 (and 7060)
        const after = vm.json('bpf_status_after_del') as SelectStatus;
        expect(after.select?.netns.some((n) => n.cookie === cookie)).toBe(false);
      });
    }

    if (service) {
      it.skipIf(noKubeProxy !== '')(
        "a Service's ClusterIP counts as in the cluster: connect() sees it, the SYN goes to the pod through kube-proxy's DNAT, with SMC's option on a selected port and without on an excluded one",
        () => {
          expect(vm.find((r) => 'service' in r).service).toBe(SERVICE.clusterIp);
          expect(ip('b')).toBe(SERVICE.endpointIp);
          expect(vm.find((r) => r.runtime === 'svc_sel').client).toMatch(/got 4194304 bytes/);
          const socks = active('svc_sel', 'a');
          expect(socks.length).toBeGreaterThan(0);
          for (const s of socks) expect(s.mode, JSON.stringify(socks)).toBe(smcMode);
          // The client's socket is connected to the ClusterIP: the DNAT happened on the node.
          for (const s of socks)
            expect(s.peer.replace(/^\[::ffff:([\d.]+)\]/, '$1'), JSON.stringify(socks)).toBe(
              `${SERVICE.clusterIp}:7003`,
            );
          const viaService = syns('b', ip('a'), ip('b'), [7003, 7003]).filter((l) =>
            l.includes('Flags [S]'),
          );
          expect(viaService.length).toBeGreaterThan(0);
          for (const l of viaService) expect(l).toContain(SMC_OPTION);
          expect(vm.find((r) => r.runtime === 'svc_excl').client).toMatch(/got 4194304 bytes/);
          expect(active('svc_excl', 'a').filter((s) => s.mode !== 'TCP')).toEqual([]);
          const excluded = syns('b', ip('a'), ip('b'), [7056, 7056]).filter((l) =>
            l.includes('Flags [S]'),
          );
          expect(excluded.length).toBeGreaterThan(0);
          for (const l of excluded) expect(l).not.toContain(SMC_OPTION);
        },
      );
    }

    if (!enforced) {
      it('where the kernel has no smc_hs_ctrl, the record says the selection is not enforced, and the pod meets the same failure', () => {
        const a = vm.json('state_a') as {
          selection: string;
          selectionWhy: string;
          warnings: string[];
        };
        expect(a).toMatchObject({ mechanism: 'bpf', selection: 'none' });
        expect(a.selectionWhy).toMatch(/no smc_hs_ctrl/);
        expect(a.warnings.join('\n')).toMatch(/SMC selection is not enforced/);
        expect(outside('selected').rc).not.toBe('0');
      });
    }
  },
);
