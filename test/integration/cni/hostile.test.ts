// The CNI plugin against what a hostile or confused node could hand it: an IPv6-only pod (which
// turning IPv6 off would cut from the network), the plugin's own netns or a FIFO as CNI_NETNS,
// oversized settings documents and NULs inside annotation values. Real netns, Debian's bridge
// and host-local before us, as a runtime chains them.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CNI_BIN_DIR,
  cleanupNetns,
  createNetns,
  readSysctlIn,
  runPlugin,
  type PluginCall,
} from '../../helpers/netns.js';

const PLUGIN = 'native/build/erdma-smcr-asan';
const SMCR = 'network.alibabacloud.com/erdma-smcr';
const SETTINGS = 'smcr.erdma.io/settings';

let dir: string;
let host: { name: string; path: string };
let counter = 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cni-hostile-'));
  host = createNetns('hhost');
});
afterAll(() => {
  cleanupNetns();
  rmSync(dir, { recursive: true, force: true });
});

// One bridge in the test host: every pod's ranges come from the same subnets.
const V4 = [[{ subnet: '10.96.0.0/24' }]];
const V6 = [[{ subnet: 'fd00:77::/64' }]];

interface Pod {
  ns: { name: string; path: string };
  id: string;
  prevResult: Record<string, unknown>;
}

/** A pod networked by Debian's bridge + host-local with the given IPAM ranges (one list per family). */
function bridgePod(ranges: { subnet: string }[][]): Pod {
  const ns = createNetns('hpod');
  const id = `hctr${++counter}${Date.now()}`;
  const conf = {
    cniVersion: '1.0.0',
    name: 'erdma-hostile',
    type: 'bridge',
    bridge: 'erdmahost0',
    isGateway: true,
    ipam: { type: 'host-local', ranges, dataDir: join(dir, 'ipam') },
  };
  const r = runPlugin({
    plugin: `${CNI_BIN_DIR}/bridge`,
    command: 'ADD',
    config: conf,
    containerId: id,
    netns: ns.path,
    ifname: 'eth0',
    inNetns: host.name,
  });
  expect(r.status, r.stdout + r.stderr).toBe(0);
  return { ns, id, prevResult: r.json as Record<string, unknown> };
}

function ours(pod: Pod, annotations: Record<string, string>, over: Partial<PluginCall> = {}) {
  return runPlugin({
    plugin: PLUGIN,
    command: 'ADD',
    config: {
      cniVersion: '1.0.0',
      name: 'erdma-hostile',
      type: 'erdma-smcr',
      pnetId: '00163E10F8B0',
      stateDir: join(dir, 'state'),
      prevResult: pod.prevResult,
      runtimeConfig: { 'io.kubernetes.cri.pod-annotations': annotations },
    },
    containerId: pod.id,
    netns: pod.ns.path,
    ifname: 'eth0',
    args: 'K8S_POD_NAMESPACE=demo;K8S_POD_NAME=web-0',
    inNetns: host.name,
    ...over,
  });
}

const statePath = (pod: Pod) => join(dir, 'state', `${pod.id}_eth0.json`);
const state = (pod: Pod) =>
  JSON.parse(readFileSync(statePath(pod), 'utf8')) as Record<string, unknown>;
const addresses = (ns: string) =>
  execFileSync('ip', ['-n', ns, '-o', 'addr', 'show', 'dev', 'eth0'], { encoding: 'utf8' });

describe('address families from prevResult', () => {
  it('keeps IPv6 on, and the pod its address, when its only addresses are IPv6; the warning says why', () => {
    const pod = bridgePod(V6);
    expect(addresses(pod.ns.name)).toMatch(/inet6 fd00:77::/);
    const r = ours(pod, { [SMCR]: 'true' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('0');
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.eth0.disable_ipv6')).toBe('0');
    expect(addresses(pod.ns.name)).toMatch(/inet6 fd00:77::/);
    expect(r.stderr).toMatch(/only IPv6 addresses: IPv6 kept/);
    expect(state(pod)).toMatchObject({
      ipv6Only: true,
      sysctls: {},
      warnings: expect.arrayContaining([expect.stringMatching(/only IPv6 addresses/)]),
    });
  });

  it('keeps IPv6 for an IPv6-only pod even when the settings document asks to turn it off', () => {
    const pod = bridgePod(V6);
    const settings = JSON.stringify({
      version: 1,
      sysctls: { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.eth0.disable_ipv6': '1' },
    });
    expect(ours(pod, { [SMCR]: 'true', [SETTINGS]: settings }).status).toBe(0);
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.eth0.disable_ipv6')).toBe('0');
    expect(addresses(pod.ns.name)).toMatch(/inet6 fd00:77::/);
  });

  it('turns IPv6 off in a dual-stack pod, as documented (its IPv4 address carries SMC-R)', () => {
    const pod = bridgePod([...V4, ...V6]);
    const r = ours(pod, { [SMCR]: 'true' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('1');
    expect(addresses(pod.ns.name)).toMatch(/inet 10\.96\.0\./);
    expect(r.stderr).not.toMatch(/IPv6 kept/);
    expect(state(pod).ipv6Only).toBe(false);
  });
});

describe('CNI_NETNS that is not a pod netns', () => {
  it("refuses the plugin's own network namespace with code 4 and changes nothing there", () => {
    const pod = bridgePod(V4);
    const before = readSysctlIn(host.name, 'net.ipv6.conf.all.disable_ipv6');
    const r = ours(pod, { [SMCR]: 'true' }, { netns: host.path });
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({ code: 4, msg: expect.stringMatching(/own network namespace/) });
    expect(readSysctlIn(host.name, 'net.ipv6.conf.all.disable_ipv6')).toBe(before);
    expect(existsSync(statePath(pod))).toBe(false);
  });

  it('answers a FIFO at once (no hang) with a clear error and leaves no pending state', () => {
    const pod = bridgePod(V4);
    const fifo = join(dir, 'not-a-netns');
    execFileSync('mkfifo', [fifo]);
    const started = Date.now();
    const r = ours(pod, { [SMCR]: 'true' }, { netns: fifo });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({
      code: 4,
      msg: expect.stringMatching(/not a network namespace/),
    });
    expect(readdirSync(join(dir, 'state')).filter((f) => f.startsWith(pod.id))).toEqual([]);
  });
});

describe('settings documents and annotation values', () => {
  const smcKeys = (n: number) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`net.smc.knob${i}`, '1']));

  it('never drops net.smc.tcp2smc when the document holds many valid keys', () => {
    const pod = bridgePod(V4);
    const r = ours(pod, {
      [SMCR]: 'true',
      [SETTINGS]: JSON.stringify({ version: 1, sysctls: smcKeys(20) }),
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // This kernel has no SMC: tcp2smc is reported missing, which shows it was attempted, first.
    expect((state(pod).missing as string[])[0]).toBe('net.smc.tcp2smc');
    expect(state(pod).missing).toHaveLength(22); // tcp2smc, the 20 knobs, SMC_PNETID
  });

  it('refuses a document with more keys than it can hold, instead of dropping some', () => {
    const pod = bridgePod(V4);
    const r = ours(pod, {
      [SMCR]: 'true',
      [SETTINGS]: JSON.stringify({ version: 1, sysctls: smcKeys(40) }),
    });
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({ code: 7, msg: expect.stringMatching(/more than 32 sysctls/) });
    expect(existsSync(statePath(pod))).toBe(false);
  });

  it.each([['true\u0000x'], ['\u0000'], ['t\u0000']])(
    'reads an annotation value with an embedded NUL (%j) as not a boolean, as the webhook does',
    (value) => {
      const pod = bridgePod(V4);
      const r = ours(pod, { [SMCR]: value });
      expect(r.status).toBe(0);
      expect(r.stderr).toMatch(/not a boolean: SMC-R stays off/);
      expect(existsSync(statePath(pod))).toBe(false);
      expect(readSysctlIn(pod.ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('0');
    },
  );

  it('still reads an escaped backslash followed by "u0000" as text', () => {
    const r = spawnSync('native/build/erdma-smcr', [], {
      env: {
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'c1',
        CNI_NETNS: '/nonexistent',
        CNI_IFNAME: 'eth0',
      },
      input: `{"cniVersion":"1.0.0","name":"a\\\\u0000b","prevResult":{"x":"\\\\u0000"}}`,
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).x).toBe('\\u0000');
  });
});

describe('CHECK after the pod interface changed, and log lines a caller cannot forge (#37)', () => {
  const doc = JSON.stringify({ version: 1, sysctls: { 'net.ipv6.conf.eth0.disable_ipv6': '1' } });

  it('says a recorded sysctl could not be read once the interface is renamed, instead of printing garbage', () => {
    const pod = bridgePod(V4);
    expect(ours(pod, { [SMCR]: 'true', [SETTINGS]: doc }).status).toBe(0);
    expect(state(pod).sysctls).toHaveProperty(['net.ipv6.conf.eth0.disable_ipv6']);
    execFileSync('ip', ['-n', pod.ns.name, 'link', 'set', 'eth0', 'down']);
    execFileSync('ip', ['-n', pod.ns.name, 'link', 'set', 'eth0', 'name', 'eth9']);
    const r = ours(pod, { [SMCR]: 'true', [SETTINGS]: doc }, { command: 'CHECK' });
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({
      code: 101,
      msg: 'net.ipv6.conf.eth0.disable_ipv6 could not be read (No such file or directory), expected 1',
    });
  });

  it('refuses a CNI_CONTAINERID with a newline without naming it raw in any log line, and escapes what it logs', () => {
    const pod = bridgePod(V4);
    const log = join(dir, `forge-${pod.id}.log`);
    const forged = `${pod.id}\n2026-01-01T00:00:00Z erdma-smcr info container=victim: SMC-R enabled`;
    const r = runPlugin({
      plugin: PLUGIN,
      command: 'ADD',
      config: {
        cniVersion: '1.0.0',
        name: 'erdma-hostile',
        type: 'erdma-smcr',
        logFile: log,
        stateDir: join(dir, 'state'),
        prevResult: pod.prevResult,
        runtimeConfig: { 'io.kubernetes.cri.pod-annotations': { [SMCR]: 'true' } },
      },
      containerId: forged,
      netns: `${pod.ns.path}\nFORGED line`,
      ifname: 'eth0',
      inNetns: host.name,
    });
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({
      code: 4,
      msg: 'CNI_CONTAINERID holds characters outside [A-Za-z0-9._-]',
    });
    for (const text of [readFileSync(log, 'utf8'), r.stderr]) {
      const lines = text.split('\n').filter((l) => l !== '');
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines)
        expect(line).toMatch(/^\d{4}-\d\d-\d\dT\S+ erdma-smcr (error|warning|info) container=-: /);
      expect(text).not.toContain('container=victim');
    }
    // A valid ID with a hostile netns path: the error line is one line, the newline escaped.
    const bad = runPlugin({
      plugin: PLUGIN,
      command: 'ADD',
      config: {
        cniVersion: '1.0.0',
        name: 'erdma-hostile',
        type: 'erdma-smcr',
        logFile: log,
        stateDir: join(dir, 'state'),
        prevResult: pod.prevResult,
        runtimeConfig: { 'io.kubernetes.cri.pod-annotations': { [SMCR]: 'true' } },
      },
      containerId: pod.id,
      netns: '/nonexistent/ns\nFORGED line',
      ifname: 'eth0',
      inNetns: host.name,
    });
    expect(bad.status).toBe(1);
    const last = readFileSync(log, 'utf8').trim().split('\n').at(-1)!;
    expect(last).toContain(
      `container=${pod.id}: ADD failed: cannot enter netns /nonexistent/ns\\x0aFORGED line`,
    );
  });
});
