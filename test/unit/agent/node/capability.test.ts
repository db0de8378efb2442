// Node capability from host facts and discovered devices, and the labels it becomes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  capability,
  capabilityLabels,
  hostFacts,
  isLabelValue,
  smcBuilt,
  type HostFacts,
} from '../../../../src/agent/node/capability.js';
import { discover } from '../../../../src/devices/discovery.js';
import { readReservedPorts } from '../../../../src/agent/node/reserved-ports.js';
import type { MechanismProbe, Probe } from '../../../../src/native/contract.js';

const good: HostFacts = {
  kernelRelease: '5.10.134-17.3.al8.x86_64',
  osImage: 'Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)',
  smcModule: true,
};
const devices = discover({ hostRoot: 'test/fixtures/sysfs/node-a' });
const erdma = devices.filter((d) => d.driverMode === 'default');

describe('node capability', () => {
  const dir = mkdtempSync(join(tmpdir(), 'facts-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads kernel release, OS and the smc module from proc and host roots', () => {
    mkdirSync(join(dir, 'proc', 'sys', 'kernel'), { recursive: true });
    mkdirSync(join(dir, 'proc', 'sys', 'net', 'smc'), { recursive: true });
    mkdirSync(join(dir, 'host', 'etc'), { recursive: true });
    writeFileSync(join(dir, 'proc', 'sys', 'kernel', 'osrelease'), '5.10.134-17.3.al8.x86_64\n');
    writeFileSync(join(dir, 'proc', 'sys', 'net', 'smc', 'tcp2smc'), '0\n');
    writeFileSync(
      join(dir, 'host', 'etc', 'os-release'),
      'NAME="Alibaba Cloud Linux"\nPRETTY_NAME="Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)"\n',
    );
    expect(hostFacts(join(dir, 'proc'), join(dir, 'host'))).toEqual({
      ...good,
      smcBuilt: 'unknown',
      reservedPorts: {},
    });
    expect(hostFacts(join(dir, 'nothing'), join(dir, 'nothing'))).toEqual({
      kernelRelease: '',
      osImage: '',
      smcModule: false,
      smcBuilt: 'unknown',
      reservedPorts: {},
    });
  });

  // The module lists as Debian's packages install them: trixie's 6.12 ships smc as a module;
  // sid's 7.2 lists none (built without CONFIG_SMC).
  it.each([
    [
      '6.12.117+deb13-amd64',
      'kernel/net/smc/smc.ko.xz: kernel/drivers/infiniband/core/ib_core.ko.xz\n',
      '',
      'module',
    ],
    ['6.12.0-custom', 'kernel/net/ipv4/tcp_bbr.ko:\n', 'kernel/net/smc/smc.ko\n', 'builtin'],
    [
      '7.2.0-1-amd64',
      'kernel/net/ipv4/tcp_bbr.ko.xz:\nkernel/net/rds/rds.ko.xz:\n',
      'kernel/net/ipv4/tcp_cubic.ko\n',
      'absent',
    ],
  ])('reads from the module lists whether kernel %s has SMC', (release, dep, builtin, want) => {
    const root = join(dir, `mods-${release}`);
    mkdirSync(join(root, 'lib', 'modules', release), { recursive: true });
    writeFileSync(join(root, 'lib', 'modules', release, 'modules.dep'), dep);
    writeFileSync(join(root, 'lib', 'modules', release, 'modules.builtin'), builtin);
    expect(smcBuilt(root, release)).toBe(want);
    expect(smcBuilt(root, 'another-release')).toBe('unknown');
  });

  it('refuses a node whose kernel has no smc at all, saying so, whatever else it runs', () => {
    const c = capability(
      {
        kernelRelease: '7.2.0-1-amd64',
        osImage: 'Debian GNU/Linux forky/sid',
        smcModule: false,
        smcBuilt: 'absent',
        mechanisms: probe({}),
      },
      devices,
    );
    expect(c).toMatchObject({ capable: false, reason: 'kernel-without-smc' });
    expect(c.detail).toMatch(/7\.2\.0-1-amd64 has no smc module \(built without CONFIG_SMC/);
    expect(isLabelValue(c.reason)).toBe(true);
  });

  // #78: loopback-ism found by the probe (SMC_NLA_SYS_IS_ISM_V2), published as a label of its own,
  // whatever the capability: it says what pods of the node get between them.
  it.each([
    [true, 'true'],
    [false, 'false'],
  ])('labels the node smcd-loopback=%s from the probe', (ok, label) => {
    const loopbackIsm: Probe = ok ? yes : no('no loopback-ism SMC-D device');
    const m = probe({ ipprotoSmc: yes, bpf: yes, afSmc: yes, loopbackIsm });
    const c = capability(debian('6.12.117+deb13-amd64', m), devices);
    expect(c).toMatchObject({ capable: true, mechanism: 'bpf', smcdLoopback: ok });
    expect(c.detail).toMatch(ok ? /SMC-D within the node/ : /^SMC-R capable \(bpf\)$/);
    expect(capabilityLabels(c)['smcr.erdma.io/smcd-loopback']).toBe(label);
    const none = capability(debian('6.12.117+deb13-amd64', m), []);
    expect(capabilityLabels(none)['smcr.erdma.io/smcd-loopback']).toBe(label);
  });

  it.each([
    [true, 'enforced'],
    [false, 'none'],
  ])('labels the node selection=%s from the probe (#93), and only a capable node', (ok, label) => {
    const selection: Probe = ok ? yes : no('no smc_hs_ctrl on this kernel');
    const m = probe({ ipprotoSmc: yes, bpf: yes, afSmc: yes, selection });
    const c = capability(debian('6.12.117+deb13-amd64', m), devices);
    expect(c).toMatchObject({ capable: true, selection: ok });
    expect(capabilityLabels(c)['smcr.erdma.io/selection']).toBe(label);
    expect(
      capabilityLabels(capability(debian('6.12.117+deb13-amd64', m), []))[
        'smcr.erdma.io/selection'
      ],
    ).toBeNull();
    // An older binary's probe says nothing of it: no label.
    const old = capability(
      debian('6.12.117+deb13-amd64', probe({ ipprotoSmc: yes, bpf: yes, afSmc: yes })),
      devices,
    );
    expect(capabilityLabels(old)['smcr.erdma.io/selection']).toBeNull();
  });

  it('says nothing of loopback-ism where no SMC socket opens at all', () => {
    const m = probe({ loopbackIsm: no('no SMC generic netlink family (smc not loaded)') });
    const c = capability(debian('6.12.117+deb13-amd64', m), devices);
    expect(c.smcdLoopback).toBeUndefined();
    expect(capabilityLabels(c)['smcr.erdma.io/smcd-loopback']).toBeNull();
  });

  // #78: the ports Alibaba's modules reserve in every netns, read from the node's own parameters.
  describe('reserved ports', () => {
    const params = (root: string, module: string, values: Record<string, string>): void => {
      mkdirSync(join(root, 'sys', 'module', module, 'parameters'), { recursive: true });
      for (const [k, v] of Object.entries(values))
        writeFileSync(join(root, 'sys', 'module', module, 'parameters', k), `${v}\n`);
    };

    it('reads erdma in compat mode and smc, and labels their ranges', () => {
      const root = join(dir, 'rsvd');
      params(root, 'erdma', { compat_mode: 'Y', reserve_ports_base: '30608' });
      params(root, 'smc', { rsvd_ports_base: '40000' });
      const r = readReservedPorts(root);
      expect(r).toEqual({ erdma: 30608, smc: 40000 });
      const labels = capabilityLabels(capability({ ...good, reservedPorts: r }, devices));
      expect(labels).toMatchObject({
        'smcr.erdma.io/erdma-reserved-ports': '30608-30623',
        'smcr.erdma.io/smc-reserved-ports': '40000-40015',
      });
      for (const v of Object.values(labels)) if (v !== null) expect(isLabelValue(v)).toBe(true);
    });

    it('reads none where the driver is not in compat mode, has no such parameter, or a bad one', () => {
      const root = join(dir, 'rsvd-none');
      params(root, 'erdma', { compat_mode: 'N', reserve_ports_base: '30608' });
      params(root, 'smc', { rsvd_ports_base: '65530' });
      expect(readReservedPorts(root)).toEqual({});
      expect(readReservedPorts(join(dir, 'nothing'))).toEqual({});
    });
  });

  // #77: a node without /lib/modules. The socket probe decides where it can; where it cannot, the
  // reason says what is unknown and why, never kernel-without-smc.
  describe('on a node without /lib/modules', () => {
    const bare = (m: MechanismProbe): HostFacts => ({
      kernelRelease: '6.12.117+deb13-amd64',
      osImage: 'Debian GNU/Linux 13 (trixie)',
      smcModule: false,
      smcBuilt: 'unknown',
      mechanisms: m,
    });

    it('reads no module lists as unknown, with or without the directory', () => {
      const root = join(dir, 'no-modules');
      mkdirSync(root, { recursive: true });
      expect(smcBuilt(root, '6.12.117+deb13-amd64')).toBe('unknown');
      // What containerd leaves for a hostPath with no type: an empty directory.
      mkdirSync(join(root, 'lib', 'modules'), { recursive: true });
      expect(smcBuilt(root, '6.12.117+deb13-amd64')).toBe('unknown');
    });

    it('lets a socket that opens decide: capable, by the mechanism the probe found', () => {
      const c = capability(bare(probe({ ipprotoSmc: yes, bpf: yes, afSmc: yes })), devices);
      expect(c).toMatchObject({ capable: true, mechanism: 'bpf' });
    });

    it('says unknown with the reason when no SMC socket opens, not kernel-without-smc', () => {
      const c = capability(bare(probe({})), devices);
      expect(c).toMatchObject({ capable: false, reason: 'smc-unknown' });
      expect(c.detail).toMatch(/no SMC socket could be opened \(no AF_SMC sockets\)/);
      expect(c.detail).toMatch(/\/lib\/modules\/6\.12\.117\+deb13-amd64\/modules\.dep/);
      expect(c.detail).toMatch(/modprobe smc/);
      expect(isLabelValue(c.reason)).toBe(true);
    });

    it('says no-smc-module (modprobe smc) on Alibaba Cloud Linux 3, whose kernels ship smc', () => {
      const c = capability(
        { ...good, smcModule: false, smcBuilt: 'unknown', mechanisms: probe({}) },
        devices,
      );
      expect(c.reason).toBe('no-smc-module');
    });

    it('still says kernel-too-old for a kernel the rule names too old', () => {
      const c = capability(
        { ...bare(probe({})), kernelRelease: '5.10.134-16.al8.x86_64', osImage: good.osImage },
        devices,
      );
      expect(c.reason).toBe('kernel-too-old');
    });
  });

  it('is capable with the right kernel, the smc module and a healthy default-mode device', () => {
    const c = capability(good, devices);
    expect(c).toMatchObject({ capable: true, driverMode: 'default', reason: '' });
    expect(capabilityLabels(c)).toEqual({
      'smcr.erdma.io/capable': 'true',
      'smcr.erdma.io/driver-mode': 'default',
      'smcr.erdma.io/reason': null,
      'smcr.erdma.io/mechanism': 'tcp2smc',
      // No probe said: the label is left off; nor does the node reserve ports.
      'smcr.erdma.io/smcd-loopback': null,
      'smcr.erdma.io/selection': null,
      'smcr.erdma.io/erdma-reserved-ports': null,
      'smcr.erdma.io/smc-reserved-ports': null,
    });
  });

  // What `erdma-smcr mechanisms` printed on the VM's kernels (test/vm/transparent.test.ts).
  const no = (why: string): Probe => ({ ok: false, why });
  const yes: Probe = { ok: true };
  const probe = (p: Partial<MechanismProbe>): MechanismProbe => ({
    mechanism: 'none',
    tcp2smc: no('no net.smc.tcp2smc'),
    ipprotoSmc: no('no IPPROTO_SMC sockets'),
    bpf: no('the kernel refused the program'),
    afSmc: no('no AF_SMC sockets'),
    ...p,
  });
  const debian = (release: string, mechanisms: MechanismProbe): HostFacts => ({
    kernelRelease: release,
    osImage: 'Debian GNU/Linux 13 (trixie)',
    smcModule: false,
    mechanisms,
  });

  it.each([
    [
      'trixie 6.12: IPPROTO_SMC and the BPF program',
      debian('6.12.117+deb13-amd64', probe({ ipprotoSmc: yes, bpf: yes, afSmc: yes })),
      'bpf',
    ],
    ['bookworm 6.1: AF_SMC only', debian('6.1.0-56-amd64', probe({ afSmc: yes })), 'preload'],
    [
      'IPPROTO_SMC but the program cannot attach (no BTF, or no privilege): preload',
      debian('6.12.117+deb13-amd64', probe({ ipprotoSmc: yes, afSmc: yes })),
      'preload',
    ],
    [
      'Alibaba Cloud Linux 3 from 5.10.134-17 with the knob and no AF_SMC probe: tcp2smc',
      { ...good, mechanisms: probe({ tcp2smc: yes, ipprotoSmc: yes, bpf: yes }) },
      'tcp2smc',
    ],
    [
      'Alibaba Cloud Linux 3 with the knob and AF_SMC: the preload library, which keeps a selection (#100)',
      { ...good, mechanisms: probe({ tcp2smc: yes, afSmc: yes }) },
      'preload',
    ],
    [
      "a tcp2smc knob on a kernel outside the seeds' rule is not the tcp2smc path",
      debian('6.12.117+deb13-amd64', probe({ tcp2smc: yes, afSmc: yes })),
      'preload',
    ],
  ])('probes, not OS names, decide the mechanism: %s', (_, facts, mechanism) => {
    const c = capability(facts, devices);
    expect(c).toMatchObject({ capable: true, mechanism, reason: '' });
    expect(capabilityLabels(c)['smcr.erdma.io/mechanism']).toBe(mechanism);
  });

  it('on a tcp2smc node with AF_SMC, labels preload and the selection enforced, saying what it costs; agent.tcp2smcNodes=tcp2smc keeps the knob (#100)', () => {
    const facts = {
      ...good,
      mechanisms: probe({
        tcp2smc: yes,
        afSmc: yes,
        selection: no('tcp2smc converts every TCP socket'),
      }),
    };
    const c = capability(facts, devices);
    expect(c).toMatchObject({ capable: true, mechanism: 'preload', selection: true });
    expect(c.detail).toMatch(
      /preload in place of tcp2smc, which cannot keep a pod's SMC selection; statically linked programs stay on TCP/,
    );
    expect(capabilityLabels(c)).toMatchObject({
      'smcr.erdma.io/mechanism': 'preload',
      'smcr.erdma.io/selection': 'enforced',
    });
    const kept = capability(facts, devices, undefined, 'tcp2smc');
    expect(kept).toMatchObject({ mechanism: 'tcp2smc', selection: false });
    expect(capabilityLabels(kept)['smcr.erdma.io/selection']).toBe('none');
  });

  it("a kernel with no mechanism is refused as before, with every probe's reason", () => {
    const c = capability(debian('5.15.0-1-amd64', probe({})), devices);
    expect(c).toMatchObject({
      capable: false,
      mechanism: 'none',
      reason: 'unsupported-os-or-kernel',
    });
    expect(c.detail).toMatch(/IPPROTO_SMC.*refused.*AF_SMC/);
    expect(capabilityLabels(c)['smcr.erdma.io/mechanism']).toBeNull();
  });

  it.each([
    [{ ...good, kernelRelease: '5.10.134-16.3.al8.x86_64' }, devices, 'kernel-too-old'],
    [
      { ...good, kernelRelease: '6.6.88-5.1.alnx4.x86_64', osImage: 'Alibaba Cloud Linux 4' },
      devices,
      'unsupported-os-or-kernel',
    ],
    [{ ...good, osImage: 'Ubuntu 22.04.4 LTS' }, devices, 'unsupported-os-or-kernel'],
    [{ ...good, smcModule: false }, devices, 'no-smc-module'],
    [good, [], 'no-erdma-device'],
    [good, devices.filter((d) => d.driverMode === 'compat'), 'driver-mode-compat'],
    [good, erdma.map((d) => ({ ...d, healthy: false })), 'no-healthy-device'],
  ])('says why not, as a valid label value (%#)', (facts, devs, reason) => {
    const c = capability(facts, devs);
    expect(c.capable).toBe(false);
    expect(c.reason).toBe(reason);
    expect(isLabelValue(c.reason)).toBe(true);
    expect(c.detail.length).toBeGreaterThan(10);
    expect(capabilityLabels(c)['smcr.erdma.io/reason']).toBe(reason);
    expect(capabilityLabels(c)['smcr.erdma.io/capable']).toBe('false');
  });
});
