// "Is my traffic really on RDMA?": the agent's reading of the native binary's smc_diag output
// (test/fixtures/smc/ holds what `erdma-smcr smc sockets|summary|stats` printed in the SMC-R VM:
// pods a and b talk SMC-R over Soft-RoCE, pods c and d are the unannotated pair that fell back),
// the status table, and device traffic from the three hw_counters naming schemes.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  formatRates,
  normalize,
  RateWatch,
  readDeviceCounters,
} from '../../../../src/agent/observe/counters.js';
import {
  agentNetnsPath,
  describeReason,
  type PodSmc,
  type SmcSocket,
  type SmcSummary,
} from '../../../../src/agent/observe/smc.js';
import { formatStatus, plainTcpWhy } from '../../../../src/cli/output/smc-status.js';
import { runCli } from '../../../helpers/cli.js';

const fixture = <T>(name: string): T =>
  JSON.parse(readFileSync(join('test/fixtures/smc', name), 'utf8')) as T;

describe('fallback reasons', () => {
  it('decodes the kernel codes, with what to do for ours', () => {
    expect(describeReason('0x03030000')).toMatchObject({
      name: 'NOSMCDEV',
      meaning: expect.stringMatching(/pnet/),
    });
    expect(describeReason('0x05000000')).toMatchObject({ name: 'PEERDECL' });
    expect(describeReason('0x03010000').meaning).toMatch(/not an SMC-R pod/);
    expect(describeReason('0x12345678')).toMatchObject({
      name: 'UNKNOWN',
      meaning: expect.stringMatching(/0x12345678/),
    });
    expect(describeReason('garbage').name).toBe('UNKNOWN');
  });

  // #78: codes of Alibaba's kernels (Anolis smc_clc.h) that upstream lacks are named too.
  it.each([
    ['0x0303000c', 'FEATUNSUPP', /vendor_exp_options/],
    ['0x09990004', 'CREDITSERR', /credits/],
  ])("names Alibaba's code %s (%s), not UNKNOWN", (code, name, meaning) => {
    expect(describeReason(code)).toMatchObject({ name, meaning: expect.stringMatching(meaning) });
  });
});

describe('status from the VM-captured output', () => {
  const pod = (name: string, withSockets: boolean): PodSmc => ({
    namespace: 'default',
    name,
    uid: `uid-${name}`,
    summary: fixture<SmcSummary>(`summary-${name}.json`),
    ...(withSockets ? { sockets: fixture<SmcSocket[]>(`sockets-${name}.json`) } : {}),
  });

  it('one line per pod: SMC-R and TCP connections, bytes, device, decoded fallback reasons', () => {
    const text = formatStatus([
      pod('a', false),
      pod('c', false),
      {
        namespace: 'default',
        name: 'gone',
        uid: 'x',
        error: 'cannot enter the netns: No such file or directory',
      },
    ]);
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^POD\s+SMC-R\s+SMC-D\s+TCP\s+TX\s+RX\s+DEVICE\s+FALLBACK REASONS$/);
    expect(lines.find((l) => l.startsWith('default/a '))).toMatch(
      /^default\/a\s+1\s+0\s+0\s+4\.0 MiB\s+4\.0 MiB\s+rxe_a:1\s+-$/,
    );
    expect(lines.find((l) => l.startsWith('default/c '))).toMatch(
      /^default\/c\s+0\s+0\s+1\s+0 B\s+0 B\s+-\s+NOSMCDEV×1$/,
    );
    expect(text).toMatch(/default\/gone\s+not read: cannot enter the netns/);
    expect(text).toMatch(/NOSMCDEV \(0x03030000\): no SMC device matches the interface/);
  });

  // #78: captured in the SMC-D VM test (test/vm/smcd.test.ts): iperf3's two connections between
  // pods of one node over loopback-ism. SMC-D is the accelerated path: its own column, no device.
  it('counts SMC-D connections as SMC-D, with loopback-ism for the device, and lists them', () => {
    const text = formatStatus([pod('smcd', true)]);
    expect(text.split('\n').find((l) => l.startsWith('default/smcd '))).toMatch(
      /^default\/smcd\s+0\s+2\s+0\s+10\.3 MiB\s+4 B\s+loopback-ism\s+-$/,
    );
    expect(text).toMatch(
      /ACTIVE\s+10\.88\.0\.2:\d+\s+10\.88\.0\.3:5201\s+SMCD\s+shared memory \(SMC-D\) tx/,
    );
    expect(text).not.toMatch(/Plain TCP|Fallback reasons/);
  });

  it('with --pod: an smcss-like table of its connections', () => {
    const text = formatStatus([pod('b', true), pod('d', true)]);
    expect(text).toMatch(
      /default\/b:\n\s+State\s+Local Address\s+Peer Address\s+Mode\s+Details\n\s+ACTIVE\s+10\.88\.0\.3:5001\s+10\.88\.0\.2:\d+\s+SMCR\s+rxe_b:1 server tx 4\.0 MiB rx 4\.0 MiB\n\s+LISTEN\s+0\.0\.0\.0:5001/,
    );
    expect(text).toMatch(
      /ACTIVE\s+10\.88\.0\.5:5002\s+10\.88\.0\.4:\d+\s+TCP\s+PEERDECL \(peer: NOSMCDEV\)/,
    );
  });

  it("says which connections stayed plain TCP, and why, by the pod's mechanism", () => {
    // Captured in the transparent VM test on 6.1: busybox's static nc in a preload pod.
    const summary = fixture<SmcSummary>('summary-static-preload.json');
    expect(summary.plainTcp).toBe(1);
    const text = formatStatus([
      { namespace: 'default', name: 'static', uid: 'u', mechanism: 'preload', summary },
      pod('a', false),
    ]);
    expect(text).toMatch(
      /Plain TCP:\n {2}default\/static: 1 TCP connection\(s\) not on SMC \(preload\): .*statically linked/,
    );
    expect(text).not.toMatch(/default\/a: .* not on SMC/);
    expect(plainTcpWhy('bpf')).toMatch(/before the plugin switched the pod on/);
    expect(plainTcpWhy(undefined)).toMatch(/no mechanism/);
  });

  it('netns paths: host paths below the host root, /proc paths as they are', () => {
    expect(agentNetnsPath('/host', '/var/run/netns/cni-1')).toBe('/host/var/run/netns/cni-1');
    expect(agentNetnsPath('/host', '/proc/42/ns/net')).toBe('/proc/42/ns/net');
    expect(agentNetnsPath('/', '/var/run/netns/cni-1')).toBe('/var/run/netns/cni-1');
  });
});

describe('device traffic from hw_counters', () => {
  const dir = mkdtempSync(join(tmpdir(), 'counters-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const tree = (
    dev: string,
    counters: Record<string, number>,
    level: 'port' | 'device' = 'port',
  ): void => {
    const d =
      level === 'port'
        ? join(dir, 'sys/class/infiniband', dev, 'ports/1/hw_counters')
        : join(dir, 'sys/class/infiniband', dev, 'hw_counters');
    mkdirSync(d, { recursive: true });
    if (level === 'device')
      mkdirSync(join(dir, 'sys/class/infiniband', dev, 'ports/1'), { recursive: true });
    for (const [k, v] of Object.entries(counters)) writeFileSync(join(d, k), `${v}\n`);
  };

  it('reads the upstream erdma names, the out-of-tree hw_ names and Soft-RoCE names alike', () => {
    tree('erdma_0', {
      tx_bytes_cnt: 1000,
      rx_bytes_cnt: 2000,
      tx_packets_cnt: 10,
      rx_packets_cnt: 20,
      tx_disable_drop_cnt: 1,
      tx_bps_limit_drop_cnt: 2,
      rx_pps_limit_drop_cnt: 3,
      listen_create_cnt: 7,
    });
    tree(
      'erdma_1',
      {
        hw_tx_bytes_cnt: 5,
        hw_rx_bytes_cnt: 6,
        hw_tx_packets_cnt: 1,
        hw_rx_packets_cnt: 2,
        hw_disable_drop_cnt: 4,
        hw_rx_bps_limit_drop_cnt: 5,
        verbs_create_cq_cnt: 9,
      },
      'device',
    );
    const rxe = Object.fromEntries(
      readFileSync('test/fixtures/smc/rxe-hw-counters-a.txt', 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
        .map(([k, v]) => [k, Number(v)]),
    );
    tree('rxe_a', rxe);
    expect(readDeviceCounters(dir, 'erdma_0')).toEqual([
      {
        device: 'erdma_0',
        port: 1,
        scheme: 'erdma',
        txBytes: 1000,
        rxBytes: 2000,
        txPackets: 10,
        rxPackets: 20,
        txDrops: 3,
        rxDrops: 3,
      },
    ]);
    expect(readDeviceCounters(dir, 'erdma_1')).toEqual([
      {
        device: 'erdma_1',
        port: 0,
        scheme: 'erdma-out-of-tree',
        txBytes: 5,
        rxBytes: 6,
        txPackets: 1,
        rxPackets: 2,
        txDrops: 4,
        rxDrops: 5,
      },
    ]);
    expect(readDeviceCounters(dir, 'rxe_a')).toEqual([
      { device: 'rxe_a', port: 1, scheme: 'rxe', txPackets: 4424, rxPackets: 4424 },
    ]);
    expect(readDeviceCounters(dir, 'absent')).toEqual([]);
    expect(normalize('x', 1, new Map([['foo', 1]]))).toEqual({
      device: 'x',
      port: 1,
      scheme: 'unknown',
    });
  });

  it('rates per second with max/avg/min over the watch; a counter reset reads as zero', () => {
    const w = new RateWatch();
    const at = (tx: number, t: number) =>
      w.sample(
        [
          {
            device: 'erdma_0',
            port: 1,
            scheme: 'erdma',
            txBytes: tx,
            rxBytes: 0,
            txPackets: tx / 1000,
            rxPackets: 0,
          },
        ],
        t,
      );
    expect(at(0, 0)[0]!.rates).toEqual({});
    expect(at(2_000_000, 1000)[0]!.rates.txBytes).toEqual({
      now: 2_000_000,
      max: 2_000_000,
      avg: 2_000_000,
      min: 2_000_000,
    });
    const third = at(3_000_000, 2000)[0]!;
    expect(third.rates.txBytes).toEqual({
      now: 1_000_000,
      max: 2_000_000,
      avg: 1_500_000,
      min: 1_000_000,
    });
    expect(third.elapsedS).toBe(2);
    expect(at(10, 3000)[0]!.rates.txBytes?.now).toBe(0);
    expect(formatRates([third])).toMatch(
      /erdma_0 port 1 {2}elapsed 2s\n.*rx.*tx\n\s+bytes\/s\s+0B\/s .*1\.00MB\/s \(2\.00M\/1\.50M\/1\.00M\)/,
    );
  });

  it('`devices --watch` samples the given count: text blocks when piped, JSON lines with --json', async () => {
    const host = join(dir, 'node-a');
    cpSync('test/fixtures/sysfs/node-a', host, { recursive: true });
    const counters = join(host, 'sys/class/infiniband/erdma_0/ports/1/hw_counters');
    mkdirSync(counters, { recursive: true });
    for (const [k, v] of Object.entries({
      hw_tx_bytes_cnt: 100,
      hw_rx_bytes_cnt: 50,
      hw_tx_packets_cnt: 2,
      hw_rx_packets_cnt: 1,
    }))
      writeFileSync(join(counters, k), `${v}\n`);
    const json = await runCli([
      'devices',
      '--host-root',
      host,
      '--watch',
      '--interval',
      '100',
      '--count',
      '2',
      '--json',
    ]);
    expect(json.code, json.stderr).toBe(0);
    const samples = json.stdout
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            ports: {
              device: string;
              totals: Record<string, number>;
              rates: Record<string, { now: number }>;
            }[];
          },
      );
    expect(samples).toHaveLength(2);
    const port = samples[1]!.ports.find((p) => p.device === 'erdma_0')!;
    expect(port.totals).toEqual({ rxBytes: 50, txBytes: 100, rxPackets: 1, txPackets: 2 });
    expect(port.rates.txBytes?.now).toBe(0);
    const text = await runCli([
      'devices',
      '--host-root',
      host,
      '--watch',
      '--interval',
      '100',
      '--count',
      '2',
    ]);
    expect(text.stdout.match(/^erdma_0 port 1 /gm)).toHaveLength(2);
    expect(text.stdout).not.toContain('\x1b['); // no screen control when piped
    const tty = await runCli(
      ['devices', '--host-root', host, '--watch', '--interval', '100', '--count', '1'],
      { tty: true },
    );
    expect(tty.stdout.startsWith('\x1b[H\x1b[2J')).toBe(true);
    const bad = await runCli(['devices', '--host-root', host, '--watch', '--interval', '5']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--interval must be at least 100/);
    const none = await runCli(['devices', '--host-root', dir, '--watch', '--count', '1']);
    expect(none.stderr).toMatch(/no eRDMA devices to watch/);
  });
});
