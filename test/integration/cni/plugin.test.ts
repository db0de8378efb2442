// The CNI plugin in real network namespaces, chained after Debian's reference bridge and
// host-local plugins exactly as a runtime chains them. The bridge lives in a test "host"
// namespace, never on the machine's own network. This kernel has no SMC: the warning path.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pluginRecordSchema, readRecords } from '../../../src/native/contract.js';
import {
  CNI_BIN_DIR,
  cleanupNetns,
  createNetns,
  deleteNetns,
  readSysctlIn,
  runPlugin,
  type PluginCall,
} from '../../helpers/netns.js';

const PLUGIN = 'native/build/erdma-smcr';
const ASAN = 'native/build/erdma-smcr-asan';
const SMCR = 'network.alibabacloud.com/erdma-smcr';

let dir: string;
let host: { name: string; path: string };
let subnetCounter = 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cni-'));
  host = createNetns('host');
});
afterAll(() => {
  cleanupNetns();
  rmSync(dir, { recursive: true, force: true });
});

interface Pod {
  ns: { name: string; path: string };
  id: string;
  prevResult: Record<string, unknown>;
  bridgeConf: Record<string, unknown>;
}

/** Runs Debian's bridge + host-local for a new pod netns and returns its result (our prevResult). */
function bridgePod(cniVersion = '1.0.0'): Pod {
  const ns = createNetns('pod');
  const id = `ctr${++subnetCounter}${Date.now()}`;
  const bridgeConf = {
    cniVersion,
    name: 'erdma-test',
    type: 'bridge',
    bridge: 'erdmatest0',
    isGateway: true,
    ipam: { type: 'host-local', subnet: '10.99.0.0/24', dataDir: join(dir, 'ipam') },
  };
  const r = runPlugin({
    plugin: `${CNI_BIN_DIR}/bridge`,
    command: 'ADD',
    config: bridgeConf,
    containerId: id,
    netns: ns.path,
    ifname: 'eth0',
    inNetns: host.name,
  });
  expect(r.status, r.stdout + r.stderr).toBe(0);
  return { ns, id, prevResult: r.json as Record<string, unknown>, bridgeConf };
}

function ourConf(
  pod: Pod,
  annotations: Record<string, string> | undefined,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    cniVersion: pod.bridgeConf.cniVersion,
    name: 'erdma-test',
    type: 'erdma-smcr',
    capabilities: { 'io.kubernetes.cri.pod-annotations': true },
    pnetId: '00163E10F8B0',
    stateDir: join(dir, 'state'),
    logFile: join(dir, 'plugin.log'),
    prevResult: pod.prevResult,
    ...(annotations ? { runtimeConfig: { 'io.kubernetes.cri.pod-annotations': annotations } } : {}),
    ...extra,
  };
}

function ours(pod: Pod, command: string, config: unknown, over: Partial<PluginCall> = {}) {
  return runPlugin({
    plugin: PLUGIN,
    command,
    config,
    containerId: pod.id,
    netns: pod.ns.path,
    ifname: 'eth0',
    args: `K8S_POD_UID=u1;IgnoreUnknown=1;K8S_POD_NAME=web-0;K8S_POD_NAMESPACE=demo;K8S_POD_INFRA_CONTAINER_ID=${pod.id}`,
    inNetns: host.name,
    ...over,
  });
}

const statePath = (pod: Pod) => join(dir, 'state', `${pod.id}_eth0.json`);
const withoutVersion = (o: Record<string, unknown>) => ({ ...o, cniVersion: undefined });

describe('erdma-smcr chained after bridge + host-local', () => {
  it('ADD on an SMC-R pod passes prevResult through, turns IPv6 off, records state, warns that SMC is missing', () => {
    const pod = bridgePod();
    const r = ours(pod, 'ADD', ourConf(pod, { [SMCR]: 'true' }));
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(withoutVersion(r.json!)).toEqual(withoutVersion(pod.prevResult));
    expect(r.json!.cniVersion).toBe('1.0.0');
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('1');
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.default.disable_ipv6')).toBe('1');
    expect(statSync(statePath(pod)).mode & 0o777).toBe(0o600);
    const state = JSON.parse(readFileSync(statePath(pod), 'utf8'));
    expect(state).toMatchObject({
      containerId: pod.id,
      ifname: 'eth0',
      podNamespace: 'demo',
      podName: 'web-0',
      podUid: 'u1',
      outcome: 'partial',
      missing: ['net.smc.tcp2smc', 'SMC_PNETID'],
      sysctls: { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.default.disable_ipv6': '1' },
      pnet: { id: '00163E10F8B0', eth: 'eth0', added: false },
    });
    // The contract with the agent (src/native/contract.ts): every field it knows, and no other.
    expect(pluginRecordSchema.safeParse(state).error?.issues ?? []).toEqual([]);
    expect(readRecords(join(dir, 'state')).get('u1')).toMatchObject({
      podUid: 'u1',
      podName: 'web-0',
      netns: pod.ns.path,
      outcome: 'partial',
      pnet: { id: '00163E10F8B0', added: false },
    });
    expect(r.stderr).toMatch(/net\.smc\.tcp2smc does not exist on this kernel/);
    expect(readFileSync(join(dir, 'plugin.log'), 'utf8')).toMatch(
      new RegExp(`container=${pod.id}: net\\.smc\\.tcp2smc does not exist`),
    );
  });

  it('writes each log line with one write(2), to stderr and to its log file', () => {
    // A byte at a time cost a system call each on unbuffered stderr (the CNI bench's ADD row went
    // from 0.45x to 0.69x tuning) and let the lines of plugins run side by side interleave.
    const pod = bridgePod();
    const trace = join(dir, `strace-${pod.id}`);
    const r = ours(pod, 'ADD', ourConf(pod, { [SMCR]: 'true' }), {
      wrap: ['strace', '-f', '-qq', '-e', 'trace=write', '-s', '65536', '-o', trace],
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const lines = r.stderr.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    const writes = readFileSync(trace, 'utf8')
      .split('\n')
      .map((l) => /write\((\d+), "(.*)", \d+\) = \d+$/.exec(l))
      .filter((m) => m !== null);
    const toStderr = writes.filter((m) => m[1] === '2').map((m) => m[2]);
    expect(toStderr).toHaveLength(lines.length);
    for (const w of toStderr) expect(w).toMatch(/^\d{4}-.* erdma-smcr \w+ container=.*\\n$/);
    // The log file's lines: one write each, ending in a newline, none split.
    const toFile = writes
      .filter((m) => m[1] !== '2' && / erdma-smcr \w+ container=/.test(m[2]!))
      .map((m) => m[2]);
    expect(toFile).toHaveLength(lines.length);
    for (const w of toFile) expect(w).toMatch(/\\n$/);
  });

  it('records the mechanism: preload when the webhook gave the pod the library (no tcp2smc needed), none without a pinned program', () => {
    const pod = bridgePod();
    const bpfDir = join(dir, 'no-bpffs-here');
    const r = ours(
      pod,
      'ADD',
      ourConf(pod, { [SMCR]: 'true', 'smcr.erdma.io/mechanism': 'preload' }, { bpfDir }),
    );
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const state = JSON.parse(readFileSync(statePath(pod), 'utf8'));
    expect(state).toMatchObject({ mechanism: 'preload', missing: ['SMC_PNETID'] });
    expect(state.bpf).toBeUndefined();
    expect(pluginRecordSchema.safeParse(state).error?.issues ?? []).toEqual([]);
    expect(r.stderr).not.toMatch(/tcp2smc/);
    expect(ours(pod, 'DEL', ourConf(pod, { [SMCR]: 'true' }, { bpfDir })).status).toBe(0);
    // Without the preload annotation and with no program pinned in bpfDir: as before the
    // mechanisms, tcp2smc is missing, and nothing is written to bpfDir.
    const again = ours(pod, 'ADD', ourConf(pod, { [SMCR]: 'true' }, { bpfDir }));
    expect(again.status, again.stdout + again.stderr).toBe(0);
    expect(JSON.parse(readFileSync(statePath(pod), 'utf8'))).toMatchObject({
      mechanism: 'none',
      missing: ['net.smc.tcp2smc', 'SMC_PNETID'],
    });
    expect(existsSync(bpfDir)).toBe(false);
    expect(ours(pod, 'DEL', ourConf(pod, { [SMCR]: 'true' }, { bpfDir })).status).toBe(0);
  });

  // #100: on a node with Alibaba's tcp2smc knob (Alibaba Cloud Linux 3), a pod the webhook gave the
  // preload library runs under the library, whose selection holds, not under the knob, which makes
  // every TCP socket of the netns SMC. No kernel here has the knob (it is Alibaba's), so the plugin
  // runs in a mount namespace of its own whose /proc/sys is a directory we made, holding
  // net/smc/tcp2smc: a stand-in, said as such; what the plugin decides and writes is real.
  it('takes the preload library over the tcp2smc knob where both are there, the knob otherwise (#100)', () => {
    const fake = mkdtempSync(join(tmpdir(), 'fake-proc-sys-'));
    try {
      for (const d of [
        'net/smc',
        'net/ipv6/conf/all',
        'net/ipv6/conf/default',
        'net/ipv6/conf/eth0',
      ])
        execFileSync('mkdir', ['-p', join(fake, d)]);
      const knob = join(fake, 'net/smc/tcp2smc');
      writeFileSync(knob, '0\n');
      for (const d of ['all', 'default', 'eth0'])
        writeFileSync(join(fake, `net/ipv6/conf/${d}/disable_ipv6`), '0\n');
      const wrap = [
        'unshare',
        '-m',
        '--propagation',
        'private',
        'sh',
        '-c',
        `mount --bind ${fake} /proc/sys && exec "$@"`,
        'sh',
      ];
      const select = JSON.stringify({
        version: 1,
        select: 'nets=10.0.0.0/8;connect=6379;listen=*',
      });
      const pod = bridgePod();
      const preload = ours(
        pod,
        'ADD',
        ourConf(pod, {
          [SMCR]: 'true',
          'smcr.erdma.io/mechanism': 'preload',
          'smcr.erdma.io/settings': select,
        }),
        { wrap },
      );
      expect(preload.status, preload.stdout + preload.stderr).toBe(0);
      const rec = JSON.parse(readFileSync(statePath(pod), 'utf8'));
      expect(rec).toMatchObject({ mechanism: 'preload', selection: 'enforced' });
      expect(readFileSync(knob, 'utf8')).toBe('0\n');
      expect(ours(pod, 'DEL', ourConf(pod, { [SMCR]: 'true' }), { wrap }).status).toBe(0);
      // The same pod without the library (it asked for tcp2smc, or the webhook was down): the knob,
      // and the record says its selection is not enforced.
      const pod2 = bridgePod();
      const knobbed = ours(
        pod2,
        'ADD',
        ourConf(pod2, {
          [SMCR]: 'true',
          'smcr.erdma.io/mechanism': 'tcp2smc',
          'smcr.erdma.io/settings': select,
        }),
        { wrap },
      );
      expect(knobbed.status, knobbed.stdout + knobbed.stderr).toBe(0);
      const rec2 = JSON.parse(readFileSync(statePath(pod2), 'utf8'));
      expect(rec2).toMatchObject({ mechanism: 'tcp2smc', selection: 'none' });
      expect(readFileSync(knob, 'utf8').trim()).toBe('1');
      expect(ours(pod2, 'DEL', ourConf(pod2, { [SMCR]: 'true' }), { wrap }).status).toBe(0);
    } finally {
      rmSync(fake, { recursive: true, force: true });
    }
  });

  it('applies allow-listed settings from the webhook annotation and ignores the rest', () => {
    const pod = bridgePod();
    const settings = JSON.stringify({
      version: 1,
      sysctls: {
        'net.ipv6.conf.eth0.disable_ipv6': '1',
        'net.ipv4.ip_forward': '1',
        'net.smc.wmem': '99999999999',
        'kernel.panic': '1',
      },
    });
    const before = readSysctlIn(pod.ns.name, 'net.ipv4.ip_forward');
    const r = ours(
      pod,
      'ADD',
      ourConf(pod, { [SMCR]: 'true', 'smcr.erdma.io/settings': settings }),
    );
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.eth0.disable_ipv6')).toBe('1');
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('0');
    expect(readSysctlIn(pod.ns.name, 'net.ipv4.ip_forward')).toBe(before);
    expect(r.stderr).toMatch(/ignoring setting: net\.ipv4\.ip_forward: not on the allow-list/);
    expect(r.stderr).toMatch(/ignoring setting: net\.smc\.wmem/);
    expect(r.stderr).toMatch(/ignoring setting: kernel\.panic/);
  });

  it('CHECK passes, then reports drift when a recorded sysctl changed', () => {
    const pod = bridgePod();
    const conf = ourConf(pod, { [SMCR]: 'true' });
    expect(ours(pod, 'ADD', conf).status).toBe(0);
    const ok = ours(pod, 'CHECK', conf);
    expect(ok.status, ok.stdout).toBe(0);
    execFileSync('ip', [
      'netns',
      'exec',
      pod.ns.name,
      'sh',
      '-c',
      'echo 0 > /proc/sys/net/ipv6/conf/all/disable_ipv6',
    ]);
    const drift = ours(pod, 'CHECK', conf);
    expect(drift.status).toBe(1);
    expect(drift.json).toMatchObject({
      code: 101,
      msg: 'net.ipv6.conf.all.disable_ipv6 is 0, expected 1',
    });
  });

  it('DEL removes the state, succeeds again, and succeeds when the netns is already gone', () => {
    const pod = bridgePod();
    const conf = ourConf(pod, { [SMCR]: 'true' });
    expect(ours(pod, 'ADD', conf).status).toBe(0);
    expect(existsSync(statePath(pod))).toBe(true);
    expect(ours(pod, 'DEL', conf).status).toBe(0);
    expect(existsSync(statePath(pod))).toBe(false);
    expect(ours(pod, 'DEL', conf).status).toBe(0);
    const pod2 = bridgePod();
    expect(ours(pod2, 'ADD', ourConf(pod2, { [SMCR]: 'true' })).status).toBe(0);
    deleteNetns(pod2.ns.name);
    expect(ours(pod2, 'DEL', ourConf(pod2, { [SMCR]: 'true' })).status).toBe(0);
    expect(existsSync(statePath(pod2))).toBe(false);
    expect(ours(pod2, 'DEL', ourConf(pod2, undefined), { netns: '' }).status).toBe(0);
  });

  it.each([
    ['no annotations at all', undefined],
    ['the annotation set to "false"', { [SMCR]: 'false' }],
    ['an invalid annotation value', { [SMCR]: 'maybe' }],
  ])('passes a pod with %s through untouched, without state', (_name, annotations) => {
    const pod = bridgePod();
    const r = ours(pod, 'ADD', ourConf(pod, annotations));
    expect(r.status).toBe(0);
    expect(withoutVersion(r.json!)).toEqual(withoutVersion(pod.prevResult));
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('0');
    expect(existsSync(statePath(pod))).toBe(false);
  });

  it.each(['0.3.1', '0.4.0', '1.1.0'])(
    'returns prevResult in the requested cniVersion %s',
    (version) => {
      // Debian's bridge (1.1.1) speaks up to 1.0.0; a 1.1.0 result has the same shape.
      const pod = bridgePod(version === '1.1.0' ? '1.0.0' : version);
      const r = ours(pod, 'ADD', ourConf(pod, { [SMCR]: 'true' }, { cniVersion: version }));
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.json!.cniVersion).toBe(version);
      expect(r.json!.ips).toEqual(pod.prevResult.ips);
    },
  );

  it('with failOnMissingKnob fails with code 100 and leaves the netns as it was', () => {
    const pod = bridgePod();
    const r = ours(
      pod,
      'ADD',
      ourConf(
        pod,
        { [SMCR]: 'true', 'smcr.erdma.io/keep-ipv6': 'false' },
        { failOnMissingKnob: true },
      ),
    );
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({
      code: 100,
      msg: expect.stringMatching(/net\.smc\.tcp2smc does not exist/),
    });
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('0');
    expect(existsSync(statePath(pod))).toBe(false);
  });
});

describe('bad input (sanitizer build)', () => {
  function asan(call: Partial<PluginCall> & { command: string; config: unknown }) {
    const r = runPlugin({
      plugin: ASAN,
      containerId: 'bad1',
      netns: '/var/run/netns/none-such',
      ifname: 'eth0',
      ...call,
    });
    expect(r.stderr).not.toMatch(/AddressSanitizer|runtime error/);
    return r;
  }

  it.each([
    ['malformed stdin', 'ADD', '{"cniVersion": "1.0.0", ', 6],
    ['a JSON array', 'ADD', '[1,2]', 6],
    ['an unknown cniVersion', 'ADD', { cniVersion: '9.9.9', name: 'n', type: 'erdma-smcr' }, 1],
    ['no cniVersion', 'ADD', { name: 'n' }, 7],
    [
      'a missing prevResult',
      'ADD',
      {
        cniVersion: '1.0.0',
        name: 'n',
        runtimeConfig: { 'io.kubernetes.cri.pod-annotations': { [SMCR]: 'true' } },
      },
      7,
    ],
    [
      'a bad pnetId',
      'ADD',
      { cniVersion: '1.0.0', name: 'n', pnetId: 'not/valid', prevResult: {} },
      7,
    ],
    [
      'annotations that are not an object',
      'ADD',
      {
        cniVersion: '1.0.0',
        name: 'n',
        prevResult: {},
        runtimeConfig: { 'io.kubernetes.cri.pod-annotations': 'x' },
      },
      7,
    ],
    ['an unknown command', 'FROB', { cniVersion: '1.0.0', name: 'n' }, 4],
  ])('answers %s with the spec error code', (_name, command, config, code) => {
    const r = asan({ command, config });
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({ code, msg: expect.any(String) });
  });

  it('answers missing environment variables with code 4', () => {
    const conf = { cniVersion: '1.0.0', name: 'n', prevResult: {} };
    expect(asan({ command: 'ADD', config: conf, containerId: undefined }).json).toMatchObject({
      code: 4,
      msg: 'CNI_CONTAINERID is not set',
    });
    expect(asan({ command: 'ADD', config: conf, netns: undefined }).json).toMatchObject({
      code: 4,
      msg: 'CNI_NETNS is not set',
    });
    expect(asan({ command: 'ADD', config: conf, ifname: 'a/b' }).json).toMatchObject({ code: 4 });
    expect(asan({ command: 'ADD', config: conf, containerId: '../etc' }).json).toMatchObject({
      code: 4,
    });
    expect(runPlugin({ plugin: ASAN, command: '', config: conf }).json).toMatchObject({
      code: 4,
      msg: 'CNI_COMMAND is not set',
    });
  });

  it('fails with code 5 on a missing netns and leaves no state behind', () => {
    const stateDir = join(dir, 'bad-state');
    const conf = {
      cniVersion: '1.0.0',
      name: 'n',
      stateDir,
      prevResult: {},
      runtimeConfig: { 'io.kubernetes.cri.pod-annotations': { [SMCR]: 'true' } },
    };
    const r = asan({ command: 'ADD', config: conf });
    expect(r.json).toMatchObject({
      code: 5,
      msg: expect.stringMatching(/cannot enter netns .*No such file/),
    });
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it('survives huge values and deep nesting without crashing', () => {
    const huge = 'x'.repeat(2_000_000);
    const r = asan({
      command: 'ADD',
      config: { cniVersion: '1.0.0', name: huge, prevResult: { big: huge } },
      containerId: 'c',
      netns: '/nonexistent',
    });
    expect(r.status).toBe(0); // no SMC-R annotation: pass-through of a big prevResult
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    expect(asan({ command: 'ADD', config: deep }).json).toMatchObject({ code: 6 });
  });
});

describe('VERSION, STATUS, GC', () => {
  it('VERSION lists 0.3.0 to 1.1.0', () => {
    const r = runPlugin({ plugin: PLUGIN, command: 'VERSION', config: '' });
    expect(r.json).toEqual({
      cniVersion: '1.1.0',
      supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
  });

  it('STATUS succeeds with a writable state dir and fails with code 50 otherwise', () => {
    const ok = runPlugin({
      plugin: PLUGIN,
      command: 'STATUS',
      config: { cniVersion: '1.1.0', name: 'n', stateDir: join(dir, 'st-ok') },
    });
    expect(ok.status).toBe(0);
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const bad = runPlugin({
      plugin: PLUGIN,
      command: 'STATUS',
      config: { cniVersion: '1.1.0', name: 'n', stateDir: join(file, 'sub') },
    });
    expect(bad.json).toMatchObject({ code: 50 });
  });

  it('GC removes state of attachments that are no longer valid and keeps the rest', () => {
    const stateDir = join(dir, 'gc');
    const a = bridgePod();
    const b = bridgePod();
    for (const p of [a, b])
      expect(ours(p, 'ADD', ourConf(p, { [SMCR]: 'true' }, { stateDir })).status).toBe(0);
    const r = runPlugin({
      plugin: PLUGIN,
      command: 'GC',
      config: {
        cniVersion: '1.1.0',
        name: 'n',
        stateDir,
        'cni.dev/valid-attachments': [{ containerID: a.id, ifname: 'eth0' }],
      },
    });
    expect(r.status, r.stdout).toBe(0);
    expect(readdirSync(stateDir)).toEqual([`${a.id}_eth0.json`]);
  });
});
