// Verdicts on SMC-R pods from the CNI plugin's records (the record format is native/src/pod_record.c's).
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { findPodNetns } from '../../../../src/agent/host.js';
import { removeLateRecords } from '../../../../src/agent/network/late-apply.js';
import { judge } from '../../../../src/agent/observe/pod-outcome.js';
import { readRecords, type PluginRecord } from '../../../../src/native/contract.js';

const pod = (
  annotations: Record<string, string>,
  status: V1Pod['status'] = { podIP: '10.0.0.5', startTime: new Date(0) },
): V1Pod => ({
  metadata: { name: 'p', namespace: 'n', uid: 'u-1', annotations },
  spec: { containers: [] },
  status,
});
const on = { 'network.alibabacloud.com/erdma-smcr': 'true' };
/** The verdict on a started SMC-R pod from its record. */
const judgeApplied = (r: PluginRecord): { reason: string; type: string; message: string } =>
  judge(pod(on), r, 10_000, 1000)!;
const rec = (r: Partial<PluginRecord>): PluginRecord => ({
  podUid: 'u-1',
  podNamespace: 'n',
  podName: 'p',
  netns: '',
  containerId: 'abc',
  outcome: 'applied',
  missing: [],
  mtimeMs: 0,
  ...r,
});

describe('pod verdicts', () => {
  it("says in the SMCREnabled Event whether the pod's SMC selection is enforced on its node (#93)", () => {
    const started = judgeApplied;
    expect(started(rec({ selection: 'enforced' })).message).toMatch(
      /connections outside its SMC selection stay on TCP$/,
    );
    const none = started(
      rec({
        selection: 'none',
        selectionWhy: 'net.smc.tcp2smc converts every TCP socket of the netns',
      }),
    );
    expect(none).toMatchObject({ reason: 'SMCREnabled', type: 'Normal' });
    expect(none.message).toMatch(
      /its SMC selection is not enforced on this node \(net\.smc\.tcp2smc converts every TCP socket of the netns\): every TCP connection of the pod uses SMC/,
    );
    expect(started(rec({})).message).not.toMatch(/selection/);
  });

  const dir = mkdtempSync(join(tmpdir(), 'pods-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the newest record per pod and skips files that are not records', () => {
    writeFileSync(
      join(dir, 'old_eth0.json'),
      JSON.stringify({
        podUid: 'u-1',
        containerId: 'old',
        outcome: 'partial',
        missing: ['net.smc.wmem'],
      }),
    );
    writeFileSync(
      join(dir, 'new_eth0.json'),
      JSON.stringify({ podUid: 'u-1', containerId: 'new', outcome: 'applied', missing: [] }),
    );
    writeFileSync(join(dir, 'torn_eth0.json'), '{"podUid": "u-2", ');
    writeFileSync(join(dir, 'nouid_eth0.json'), JSON.stringify({ outcome: 'applied' }));
    utimesSync(join(dir, 'old_eth0.json'), 1000, 1000);
    const records = readRecords(dir);
    expect([...records.keys()]).toEqual(['u-1']);
    expect(records.get('u-1')?.containerId).toBe('new');
  });

  it('judges only SMC-R pods that have started, after the grace period', () => {
    expect(judge(pod({}), undefined, 10_000, 1000)).toBeUndefined();
    expect(
      judge(pod({ 'network.alibabacloud.com/erdma-smcr': 'false' }), undefined, 10_000, 1000),
    ).toBeUndefined();
    expect(judge(pod(on, {}), undefined, 10_000, 1000)).toBeUndefined();
    expect(
      judge(pod(on, { podIP: '10.0.0.5', startTime: new Date(9_500) }), undefined, 10_000, 1000),
    ).toBeUndefined();
    expect(judge(pod(on), undefined, 10_000, 1000)).toMatchObject({
      kind: 'missed',
      reason: 'SMCRNotApplied',
      type: 'Warning',
    });
  });

  it('tells nothing from a pending record (the ADD is under way), and an unfinished ADD once its grace is over', () => {
    // Reproduced first (CI, the cluster suite): the agent read the record the plugin writes before
    // it enters the netns, which says mechanism none with no reason, and told SMCRUnavailable for good.
    const pending = rec({ outcome: 'pending', mechanism: 'none', mtimeMs: 9_500 });
    const starting = pod(on, {});
    expect(judge(starting, pending, 10_000, 1000)).toBeUndefined();
    expect(judge(pod(on), pending, 10_000, 1000)).toBeUndefined();
    const late = judge(pod(on), pending, 10_600, 1000);
    expect(late).toMatchObject({ kind: 'missed', reason: 'SMCRNotApplied', type: 'Warning' });
    expect(late?.message).toMatch(
      /began for this pod at 1970-01-01T00:00:09\.500Z and did not finish/,
    );
    // The plugin's second write carries the verdict, told as before.
    const done = rec({
      outcome: 'partial',
      mechanism: 'none',
      mechanismWhy: 'no net.smc.tcp2smc',
      missing: ['net.smc.tcp2smc'],
    });
    expect(judge(pod(on), done, 10_000, 1000)?.message).toMatch(/set up \(no net\.smc\.tcp2smc\)/);
  });

  it('tells nothing of a finished or terminating pod without its record (the runtime removed it with the sandbox)', () => {
    // Reproduced first: a completed Job's pod got SMCRNotApplied, and counted as missed.
    for (const phase of ['Succeeded', 'Failed'])
      expect(
        judge(
          pod(on, { podIP: '10.0.0.5', startTime: new Date(0), phase }),
          undefined,
          10_000,
          1000,
        ),
      ).toBeUndefined();
    const terminating = {
      ...pod(on),
      metadata: { ...pod(on).metadata, deletionTimestamp: new Date(9_000) },
    };
    expect(judge(terminating, undefined, 10_000, 1000)).toBeUndefined();
    // Its record, while there, is still told; a running pod without one is still missed.
    expect(judge(terminating, rec({}), 10_000, 1000)).toMatchObject({ reason: 'SMCREnabled' });
    expect(
      judge(
        pod(on, { podIP: '10.0.0.5', startTime: new Date(0), phase: 'Running' }),
        undefined,
        10_000,
        1000,
      ),
    ).toMatchObject({ reason: 'SMCRNotApplied' });
  });

  it("waits for the grace period from the kubelet's sandbox condition, and not at all while it is False", () => {
    // A sandbox made again (a crash, a node reboot) has no record between its DEL and the next
    // ADD: reproduced first, such a pod was missed at once, its start time long past.
    const withSandbox = (type: string, status: string, at: number): V1Pod =>
      pod(on, {
        podIP: '10.0.0.5',
        startTime: new Date(0),
        phase: 'Running',
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(0) },
          { type, status, lastTransitionTime: new Date(at) },
        ],
      });
    for (const type of ['PodReadyToStartContainers', 'PodHasNetwork']) {
      expect(judge(withSandbox(type, 'False', 9_000), undefined, 100_000, 1000)).toBeUndefined();
      expect(judge(withSandbox(type, 'True', 99_500), undefined, 100_000, 1000)).toBeUndefined();
      expect(judge(withSandbox(type, 'True', 98_000), undefined, 100_000, 1000)).toMatchObject({
        reason: 'SMCRNotApplied',
      });
    }
    // While False, a record still there is told.
    expect(
      judge(withSandbox('PodReadyToStartContainers', 'False', 0), rec({}), 100_000, 1000),
    ).toMatchObject({ reason: 'SMCREnabled' });
  });

  it('gives a pod whose record went (the runtime took its sandbox down) its grace again from then', () => {
    // Running by its status, started long ago, the record gone at 9,500: not yet missed at
    // 10,000; missed once the grace has passed with no new record (a sandbox made without us).
    expect(judge(pod(on), undefined, 10_000, 1000, 9_500)).toBeUndefined();
    expect(judge(pod(on), undefined, 10_500, 1000, 9_500)).toMatchObject({
      reason: 'SMCRNotApplied',
    });
  });

  it('turns each record outcome into a reason and a fix', () => {
    expect(judge(pod(on), rec({}), 0, 0)).toMatchObject({
      kind: 'applied',
      reason: 'SMCREnabled',
      type: 'Normal',
    });
    expect(
      judge(pod(on), rec({ outcome: 'partial', missing: ['net.smc.tcp2smc', 'SMC_PNETID'] }), 0, 0),
    ).toMatchObject({ kind: 'tcp', reason: 'SMCRUnavailable' });
    // No mechanism at ADD: the plugin's why, and no advice to change the OS.
    const none = judge(
      pod(on),
      rec({
        outcome: 'partial',
        missing: ['net.smc.tcp2smc'],
        mechanism: 'none',
        mechanismWhy: 'no IPPROTO_SMC sockets on this kernel (no AF_SMC)',
      }),
      0,
      0,
    );
    expect(none).toMatchObject({ kind: 'tcp', reason: 'SMCRUnavailable' });
    expect(none?.message).toMatch(
      /no SMC mechanism was active on its node.*\(no IPPROTO_SMC sockets/,
    );
    expect(none?.message).not.toMatch(/run the pod on Alibaba Cloud Linux/);
    expect(
      judge(pod(on), rec({ outcome: 'partial', missing: ['SMC_PNETID'] }), 0, 0)?.message,
    ).toMatch(/fall back to TCP/);
    expect(
      judge(pod(on), rec({ outcome: 'partial', missing: ['net.smc.autocorking_size'] }), 0, 0)
        ?.message,
    ).toMatch(/still use SMC-R/);
    expect(judge(pod(on), rec({ ipv6Only: true }), 0, 0)).toMatchObject({
      kind: 'tcp',
      reason: 'SMCRIPv6Only',
      type: 'Warning',
      message: expect.stringMatching(/only addresses are IPv6/),
    });
    const late = judge(
      pod(on),
      rec({ containerId: 'late-u-1', mtimeMs: Date.UTC(2026, 10, 22, 12) }),
      0,
      0,
    );
    expect(late).toMatchObject({ kind: 'late', reason: 'SMCRAppliedLate' });
    expect(late?.message).toMatch(
      /enabled at 2026-11-22T12:00:00.000Z, after the pod started.*Connections opened before stay on TCP/,
    );
  });

  it('finds a pod process by its UID in cgroupfs and systemd cgroup paths', () => {
    const proc = join(dir, 'proc');
    for (const [pid, cg] of [
      ['10', '0::/kubepods/besteffort/podu-9/abc\n'],
      ['11', '0::/kubepods.slice/kubepods-podu_1.slice/x.scope\n'],
    ] as const) {
      mkdirSync(join(proc, pid, 'ns'), { recursive: true });
      writeFileSync(join(proc, pid, 'cgroup'), cg);
      writeFileSync(join(proc, pid, 'ns', 'net-target'), '');
    }
    // ns/net is a link in /proc; a relative symlink stands in.
    for (const pid of ['10', '11']) symlinkSync('net-target', join(proc, pid, 'ns', 'net'));
    expect(findPodNetns(proc, 'u-1')).toBe(join(proc, '11', 'ns', 'net'));
    expect(findPodNetns(proc, 'u-9')).toBe(join(proc, '10', 'ns', 'net'));
    expect(findPodNetns(proc, 'u-404')).toBeUndefined();
  });
});

describe('late-apply records', () => {
  it('removes only late records of pods that left, once they are old enough; runtime records stay', () => {
    const dir = mkdtempSync(join(tmpdir(), 'late-'));
    try {
      const files = [
        'late-gone_eth0.json',
        'late-alive_eth0.json',
        'late-young_eth0.json',
        'c0ffee_eth0.json',
        'late-gone_eth0.json.tmp.1',
      ];
      for (const f of files) writeFileSync(join(dir, f), '{}');
      for (const f of [
        'late-gone_eth0.json',
        'late-alive_eth0.json',
        'c0ffee_eth0.json',
        'late-gone_eth0.json.tmp.1',
      ])
        utimesSync(join(dir, f), 1000, 1000);
      const removed = removeLateRecords(dir, new Set(['alive']), Date.now() - 60_000);
      expect(removed).toEqual(['late-gone_eth0.json']);
      expect(readdirSync(dir).sort()).toEqual([
        'c0ffee_eth0.json',
        'late-alive_eth0.json',
        'late-gone_eth0.json.tmp.1',
        'late-young_eth0.json',
      ]);
      expect(removeLateRecords(join(dir, 'missing'), new Set(), Date.now())).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the preload library in the SMCREnabled Event (#100)', () => {
  it('says that statically linked programs stay on TCP', () => {
    const m = judgeApplied(rec({ mechanism: 'preload', selection: 'enforced' })).message;
    expect(m).toMatch(
      /statically linked programs \(Go, busybox\), which never load the preload library/,
    );
    expect(judgeApplied(rec({ mechanism: 'bpf', selection: 'enforced' })).message).not.toMatch(
      /statically/,
    );
  });
});
