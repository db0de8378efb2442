// The node agent's orchestration in process: its duties run by a clock the test moves, Events
// going to a list, pods from a fixed list, a fixture host tree. What the real API server adds
// (RBAC, the pod watch, Events as stored) is in test/integration/cluster/agent.test.ts.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeAgent } from '../../../src/agent/agent.js';
import { Schedule, type Clock } from '../../../src/agent/duty.js';
import { Told, type EventSink, type EventText } from '../../../src/agent/events.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import type { PodSource } from '../../../src/agent/pod-duty.js';
import { discover } from '../../../src/devices/discovery.js';
import { SmcDuty } from '../../../src/agent/observe/smc-sampling.js';
import { formatStatus } from '../../../src/cli/output/smc-status.js';
import type { NativeBinary } from '../../../src/native/binary.js';
import { loadConfig } from '../../../src/config/load.js';

/** A clock the test moves: timers fire only when `advance` passes their time. */
class ManualClock implements Clock {
  /** Starts at the real time: file times (records) are compared with it. */
  t = Date.now();
  private timers: { at: number; f: () => void; live: boolean }[] = [];
  now(): number {
    return this.t;
  }
  after(ms: number, f: () => void): { cancel(): void } {
    const timer = { at: this.t + ms, f, live: true };
    this.timers.push(timer);
    return { cancel: () => void (timer.live = false) };
  }
  /** Moves time forward, firing each due timer in order. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.live && x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      due.live = false;
      this.t = due.at;
      due.f();
      await new Promise((r) => setImmediate(r));
    }
    this.t = end;
  }
  get pending(): number {
    return this.timers.filter((x) => x.live).length;
  }
}

class Events implements EventSink {
  readonly told: { about: string; what: EventText }[] = [];
  fail = false;
  async pod(pod: V1Pod, what: EventText): Promise<boolean> {
    if (this.fail) return false;
    this.told.push({ about: `${pod.metadata?.namespace}/${pod.metadata?.name}`, what });
    return true;
  }
  async node(what: EventText): Promise<boolean> {
    this.told.push({ about: 'node', what });
    return true;
  }
}

class Pods implements PodSource {
  list: V1Pod[] = [];
  synced = true;
  fresh = true;
  async start(): Promise<boolean> {
    return true;
  }
  objects(): readonly V1Pod[] {
    return this.list;
  }
  async close(): Promise<void> {}
}

const smcrPod = (name: string, uid: string, since: number): V1Pod => ({
  metadata: {
    name,
    namespace: 'apps',
    uid,
    annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' },
  },
  spec: { containers: [] },
  status: { podIP: '10.0.0.9', startTime: new Date(since) },
});

describe('Told: each thing said once', () => {
  it('is due for a new value, not for the same one, and again after its window', () => {
    const clock = new ManualClock();
    const told = new Told(clock, 1000);
    expect(told.due('pod-1', 'SMCRPartial')).toBe(true);
    told.told('pod-1', 'SMCRPartial');
    expect(told.due('pod-1', 'SMCRPartial')).toBe(false);
    expect(told.due('pod-1', 'SMCREnabled')).toBe(true);
    clock.t += 999;
    expect(told.due('pod-1', 'SMCRPartial')).toBe(false);
    clock.t += 1;
    expect(told.due('pod-1', 'SMCRPartial')).toBe(true);
    told.forgetExcept((k) => k !== 'pod-1');
    expect(told.size).toBe(0);
  });

  it('counts its changes, hands out what was told, and takes it back as told now', () => {
    const clock = new ManualClock();
    const told = new Told(clock, 1000);
    told.told('pod-1', 'SMCREnabled');
    told.told('pod-2', 'SMCRPartial');
    told.forgetExcept((k) => k !== 'pod-2');
    expect(told.version).toBe(3);
    expect(told.values()).toEqual({ 'pod-1': 'SMCREnabled' });
    clock.t += 5000;
    const next = new Told(clock, 1000);
    next.restore(told.values());
    expect(next.version).toBe(0);
    expect(next.due('pod-1', 'SMCREnabled')).toBe(false);
    expect(next.due('pod-1', 'SMCRPartial')).toBe(true);
    clock.t += 1000;
    expect(next.due('pod-1', 'SMCREnabled')).toBe(true);
  });
});

describe('Schedule', () => {
  it('runs one pass at a time, plans the next a period after, and stops when closed', async () => {
    const clock = new ManualClock();
    let runs = 0;
    let release!: () => void;
    const s = new Schedule(
      () => {
        runs += 1;
        return new Promise<void>((r) => (release = r));
      },
      100,
      clock,
      () => undefined,
    );
    const first = s.now();
    const joined = s.now();
    expect(runs).toBe(1);
    release();
    await first;
    await joined;
    expect(runs).toBe(1);
    await clock.advance(99);
    expect(runs).toBe(1);
    await clock.advance(1);
    expect(runs).toBe(2);
    release();
    await s.close();
    await clock.advance(1000);
    expect(runs).toBe(2);
    expect(clock.pending).toBe(0);
  });

  it('reports a failed pass and goes on', async () => {
    const clock = new ManualClock();
    const errors: unknown[] = [];
    let runs = 0;
    const s = new Schedule(
      async () => {
        runs += 1;
        throw new Error(`pass ${runs}`);
      },
      10,
      clock,
      (e) => errors.push(e),
    );
    await s.now();
    await clock.advance(10);
    expect(errors.map((e) => (e as Error).message)).toEqual(['pass 1', 'pass 2']);
    await s.close();
  });
});

describe('the agent, in process', () => {
  let dir: string;
  let host: string;
  let proc: string;
  let clock: ManualClock;
  let events: Events;
  let pods: Pods;
  let agent: NodeAgent | undefined;
  let metrics: AgentMetrics;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-unit-'));
    host = join(dir, 'host');
    proc = join(dir, 'proc');
    cpSync('test/fixtures/sysfs/node-a', host, { recursive: true });
    writeFileSync(join(dir, 'os-release'), '');
    mkdirSync(join(host, 'etc'), { recursive: true });
    writeFileSync(
      join(host, 'etc/os-release'),
      'PRETTY_NAME="Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)"\n',
    );
    mkdirSync(join(proc, 'sys/kernel'), { recursive: true });
    mkdirSync(join(proc, 'sys/net/smc'), { recursive: true });
    writeFileSync(join(proc, 'sys/kernel/osrelease'), '5.10.134-17.3.al8.x86_64\n');
    writeFileSync(join(proc, 'sys/net/smc/tcp2smc'), '0\n');
    mkdirSync(join(host, 'var/lib/cni/erdma-smcr'), { recursive: true });
    clock = new ManualClock();
    events = new Events();
    pods = new Pods();
  });

  afterEach(async () => {
    await agent?.close();
    agent = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  function start(flags: Record<string, unknown> = {}): Promise<void> {
    const config = loadConfig({
      flags: {
        'agent.hostRoot': host,
        'agent.procRoot': proc,
        'agent.nodeName': 'node-1',
        'agent.cniInstall': false,
        'agent.hostPnet': false,
        'agent.smcSampleMs': 0,
        'agent.podGraceMs': 1000,
        'agent.lateApply': false,
        ...flags,
      },
    });
    metrics = new AgentMetrics({ defaultMetrics: false });
    agent = new NodeAgent({
      config: config.agent,
      logger: pino({ level: 'silent' }),
      metrics,
      discover: () => discover({ hostRoot: host }),
      clock,
      events,
      pods,
    });
    return agent.start();
  }

  const record = (uid: string, outcome: string, missing: string[] = []): void =>
    writeFileSync(
      join(host, 'var/lib/cni/erdma-smcr', `c-${uid}_eth0.json`),
      JSON.stringify({
        podNamespace: 'apps',
        podName: uid,
        podUid: uid,
        containerId: `c-${uid}`,
        ifname: 'eth0',
        netns: '/var/run/netns/x',
        outcome,
        sysctls: {},
        missing,
        pnet: { id: '', eth: 'eth0', added: false },
        warnings: [],
        ipv6Only: false,
      }),
    );

  it('says why it is not ready, duty by duty, and nothing once every duty is in place', async () => {
    await start();
    expect(agent!.readiness()).toBe('labels: node labels needs a Kubernetes API connection');
    expect(agent!.last).toMatchObject({ capable: true });
    await agent!.close();
    agent = undefined;
    await start({ 'agent.nodeLabels': false });
    expect(agent!.readiness()).toBeUndefined();
  });

  it('tells each pod outcome once, again when it changes, and forgets pods that left', async () => {
    pods.list = [smcrPod('a', 'uid-a', clock.t), smcrPod('b', 'uid-b', clock.t)];
    record('uid-a', 'partial', ['net.smc.wmem']);
    await start({ 'agent.nodeLabels': false });
    // b has no record: it is missed only once its grace has passed.
    expect(events.told.map((e) => [e.about, e.what.reason])).toEqual([['apps/a', 'SMCRPartial']]);
    await clock.advance(5000);
    expect(events.told.map((e) => [e.about, e.what.reason])).toEqual([
      ['apps/a', 'SMCRPartial'],
      ['apps/b', 'SMCRNotApplied'],
    ]);
    record('uid-a', 'applied');
    await agent!.podsPass();
    expect(events.told.at(-1)).toMatchObject({
      about: 'apps/a',
      what: { reason: 'SMCREnabled', type: 'Normal' },
    });
    const told = events.told.length;
    await clock.advance(60_000);
    expect(events.told).toHaveLength(told);
    // a leaves and comes back with the same outcome: told again.
    pods.list = [smcrPod('b', 'uid-b', clock.t)];
    await agent!.podsPass();
    pods.list = [smcrPod('a', 'uid-a', clock.t), smcrPod('b', 'uid-b', clock.t)];
    await agent!.podsPass();
    expect(events.told.at(-1)).toMatchObject({ about: 'apps/a', what: { reason: 'SMCREnabled' } });
  });

  it('tells nothing more, and counts nothing missed, once a pod finished and its record went with its sandbox', async () => {
    // Reproduced first: a completed Job's pod got an SMCRNotApplied Event after SMCREnabled, and
    // counted as missed (ErdmaSmcrPodsMissed fired) for as long as the pod object stayed.
    pods.list = [smcrPod('job', 'uid-job', clock.t)];
    record('uid-job', 'applied');
    await start({ 'agent.nodeLabels': false });
    expect(events.told.map((e) => e.what.reason)).toEqual(['SMCREnabled']);
    rmSync(join(host, 'var/lib/cni/erdma-smcr', 'c-uid-job_eth0.json'));
    const done = smcrPod('job', 'uid-job', clock.t);
    pods.list = [{ ...done, status: { ...done.status, phase: 'Succeeded' } }];
    await clock.advance(60_000);
    await agent!.podsPass();
    expect(events.told.map((e) => e.what.reason)).toEqual(['SMCREnabled']);
    expect(await metrics.registry.getSingleMetricAsString('erdma_smcr_agent_pods')).toContain(
      'erdma_smcr_agent_pods{outcome="missed"} 0',
    );
  });

  it('tells again after an Event could not be posted', async () => {
    pods.list = [smcrPod('a', 'uid-a', clock.t)];
    record('uid-a', 'partial', ['net.smc.wmem']);
    events.fail = true;
    await start({ 'agent.nodeLabels': false });
    expect(events.told).toEqual([]);
    events.fail = false;
    await agent!.podsPass();
    expect(events.told.map((e) => e.what.reason)).toEqual(['SMCRPartial']);
  });

  it('tells only what changed after a restart: what was told is kept on the host', async () => {
    // Reproduced first: each agent process (an update, a crash) posted the Event of every SMC-R
    // pod of its node again, and was Ready only once they were all posted.
    const file = join(host, 'run/erdma-smcr/pod-events.json');
    pods.list = ['a', 'b', 'c'].map((n) => smcrPod(n, `uid-${n}`, clock.t));
    record('uid-a', 'applied');
    record('uid-b', 'partial', ['net.smc.wmem']);
    record('uid-c', 'applied');
    await start({ 'agent.nodeLabels': false });
    expect(events.told.map((e) => e.what.reason)).toEqual([
      'SMCREnabled',
      'SMCRPartial',
      'SMCREnabled',
    ]);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      told: { 'uid-a': 'SMCREnabled', 'uid-b': 'SMCRPartial', 'uid-c': 'SMCREnabled' },
    });
    await agent!.close();
    // The next process: b's outcome changed and c left the node meanwhile.
    events.told.length = 0;
    record('uid-b', 'applied');
    pods.list = pods.list.slice(0, 2);
    await start({ 'agent.nodeLabels': false });
    expect(events.told.map((e) => [e.about, e.what.reason])).toEqual([['apps/b', 'SMCREnabled']]);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      told: { 'uid-a': 'SMCREnabled', 'uid-b': 'SMCREnabled' },
    });
  });

  it('tells each outcome again when what was told cannot be read, and keeps working when it cannot be written', async () => {
    const file = join(host, 'run/erdma-smcr/pod-events.json');
    mkdirSync(join(host, 'run/erdma-smcr'), { recursive: true });
    writeFileSync(file, '{"told": {"uid-a": "SMCREn');
    pods.list = [smcrPod('a', 'uid-a', clock.t)];
    record('uid-a', 'applied');
    await start({ 'agent.nodeLabels': false });
    expect(events.told.map((e) => e.what.reason)).toEqual(['SMCREnabled']);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ told: { 'uid-a': 'SMCREnabled' } });
    await agent!.close();
    // A directory where the file should be: nothing kept, each outcome still told once per process.
    rmSync(file);
    mkdirSync(file);
    events.told.length = 0;
    await start({ 'agent.nodeLabels': false });
    await agent!.podsPass();
    expect(events.told.map((e) => e.what.reason)).toEqual(['SMCREnabled']);
    expect(agent!.readiness()).toBeUndefined();
  });

  it('reports a broken pod watch and keeps late records while it is not current', async () => {
    pods.list = [];
    await start({ 'agent.nodeLabels': false });
    pods.fresh = false;
    expect(agent!.readiness()).toBe('pods: pod watch broken; retrying');
    const late = join(host, 'var/lib/cni/erdma-smcr', 'late-uid-x_eth0.json');
    writeFileSync(late, JSON.stringify({ podUid: 'uid-x', podName: 'x', podNamespace: 'apps' }));
    clock.t += 10_000;
    await agent!.podsPass();
    expect((await import('node:fs')).existsSync(late)).toBe(true);
    pods.fresh = true;
    await agent!.podsPass();
    expect((await import('node:fs')).existsSync(late)).toBe(false);
  });
});

/**
 * An SmcDuty over one recorded pod (apps/NAME) whose netns the fake binary answers with `summary()`
 * (the real one is read in test/integration/native); `dir` is removed by the caller.
 */
function samplingDuty(name: string, summary: () => object, record: object = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'smc-unit-'));
  const state = join(dir, 'state');
  mkdirSync(state);
  mkdirSync(join(dir, 'proc'));
  writeFileSync(
    join(state, 'c1_eth0.json'),
    JSON.stringify({
      podNamespace: 'apps',
      podName: name,
      podUid: `uid-${name}`,
      netns: `/var/run/netns/${name}`,
      ...record,
    }),
  );
  const binary = {
    smcSummaries: async (paths: readonly string[]) => new Map(paths.map((p) => [p, summary()])),
  } as unknown as NativeBinary;
  const clock = new ManualClock();
  const events = new Events();
  const metrics = new AgentMetrics({ defaultMetrics: false });
  const duty = new SmcDuty({
    binary,
    stateDir: state,
    hostRoot: '/',
    procRoot: join(dir, 'proc'),
    pods: () => [smcrPod(name, `uid-${name}`, clock.t)],
    fallbackEventMs: 60_000,
    events,
    metrics,
    clock,
    logger: pino({ level: 'silent' }),
  });
  return { dir, duty, clock, events, metrics };
}

/** A summary as the native binary answers for a pod's netns: zeros but what a test sets. */
function smcSummary(set: object): object {
  return {
    sockets: 0,
    listening: 0,
    byMode: { SMCR: 0, SMCD: 0, TCP: 0 },
    plainTcp: 0,
    loopbackFallbacks: 0,
    selectionKept: 0,
    txBytes: 0,
    rxBytes: 0,
    fallbacks: {},
    otherFallbacks: 0,
    devices: [],
    ...set,
  };
}

describe('SMC sampling, in process', () => {
  it('labels fallbacks with the decoded reason, keeps the label set bounded, and tells each pod once a window', async () => {
    const summary = smcSummary({
      sockets: 4,
      byMode: { SMCR: 1, SMCD: 0, TCP: 3 },
      txBytes: 10,
      rxBytes: 20,
      fallbacks: { '0x03030000': 2 },
      otherFallbacks: 1,
    });
    const { dir, duty, clock, events, metrics } = samplingDuty('db', () => summary);
    try {
      await duty.pass();
      const text = await metrics.registry.metrics();
      expect(text).toContain(
        'erdma_smcr_pod_fallback_connections{namespace="apps",pod="db",reason="NOSMCDEV"} 2',
      );
      expect(text).toContain(
        'erdma_smcr_pod_fallback_connections{namespace="apps",pod="db",reason="OTHER"} 1',
      );
      expect(text).toContain('erdma_smcr_pod_connections{namespace="apps",pod="db",mode="TCP"} 3');
      expect(events.told.map((e) => [e.about, e.what.reason])).toEqual([
        ['apps/db', 'SMCRFallback'],
      ]);
      expect(events.told[0]!.what.message).toMatch(
        /^3 of 4 connection\(s\) fell back to TCP\. NOSMCDEV \(0x03030000, 2 connection\(s\)\)/,
      );
      await duty.pass();
      expect(events.told).toHaveLength(1);
      clock.t += 60_000;
      await duty.pass();
      expect(events.told).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // #93: connections the pod's selection kept on TCP are neither fallbacks nor plain TCP: a series
  // and a status line of their own, no SMCRFallback Event.
  it('counts connections the selection kept on TCP apart: KEPT series, a status line, no Event', async () => {
    const summary = smcSummary({
      sockets: 2,
      byMode: { SMCR: 1, SMCD: 0, TCP: 0 },
      selectionKept: 2,
      txBytes: 10,
      rxBytes: 20,
    });
    const { dir, duty, events, metrics } = samplingDuty('web', () => summary);
    try {
      await duty.pass();
      const text = await metrics.registry.metrics();
      expect(text).toContain(
        'erdma_smcr_pod_connections{namespace="apps",pod="web",mode="KEPT"} 2',
      );
      expect(text).not.toMatch(/erdma_smcr_pod_fallback_connections\{/);
      expect(events.told).toEqual([]);
      expect(formatStatus(duty.last)).toMatch(
        /\nKept on TCP by the selection:\n {2}apps\/web: 2 connection\(s\) kept on TCP by its SMC selection/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // #93: on a node whose mechanism cannot keep to the pod's selection (IPPROTO_SMC before 6.19,
  // tcp2smc), the plugin's record says so; status says it too, beside the Event.
  it("says in status when the node does not enforce the pod's SMC selection, and why", async () => {
    const summary = smcSummary({ sockets: 1, byMode: { SMCR: 1, SMCD: 0, TCP: 0 } });
    const notEnforced = {
      mechanism: 'bpf',
      select: 'nets=10.0.0.0/8;connect=6379;listen=*',
      selection: 'none',
      selectionWhy: 'no smc_hs_ctrl in this kernel',
    };
    for (const [record, said] of [
      [notEnforced, true],
      [{ ...notEnforced, selection: 'enforced', selectionWhy: undefined }, false],
    ] as const) {
      const { dir, duty } = samplingDuty('cache', () => summary, record);
      try {
        await duty.pass();
        expect(duty.last[0]).toMatchObject({ selection: record.selection });
        const text = formatStatus(duty.last);
        if (said)
          expect(text).toContain(
            '\nSMC selection not enforced:\n  apps/cache: its SMC selection is not enforced on this node (no smc_hs_ctrl in this kernel): every TCP connection of the pod uses SMC',
          );
        else expect(text).not.toContain('not enforced');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  // #85: loopback connections fall back by design (no RDMA device serves lo): counted apart, no
  // Event, no series of the fallback metric (which the alert reads), a line of their own in status.
  it('counts loopback fallbacks apart: no SMCRFallback Event and no fallback series for them', async () => {
    const loopback = {
      sockets: 4,
      listening: 1,
      byMode: { SMCR: 1, SMCD: 0, TCP: 3 },
      loopbackFallbacks: 3,
    };
    let summary = smcSummary(loopback);
    const { dir, duty, events, metrics } = samplingDuty('web', () => summary);
    try {
      await duty.pass();
      const text = await metrics.registry.metrics();
      expect(text).toContain(
        'erdma_smcr_pod_loopback_fallback_connections{namespace="apps",pod="web"} 3',
      );
      expect(text).not.toMatch(/erdma_smcr_pod_fallback_connections\{/);
      expect(events.told).toEqual([]);
      expect(formatStatus(duty.last)).toMatch(
        /\nLoopback:\n {2}apps\/web: 3 connection\(s\) to or from 127\.0\.0\.1 or ::1 fell back to TCP, as expected/,
      );
      // One that is not loopback among them is told, and counted as such.
      summary = smcSummary({
        ...loopback,
        byMode: { SMCR: 1, SMCD: 0, TCP: 4 },
        fallbacks: { '0x03010000': 1 },
      });
      await duty.pass();
      expect(events.told.map((e) => e.what.message)).toEqual([
        expect.stringMatching(/^1 of 2 connection\(s\) fell back to TCP\. PEERNOSMC/),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('under preload, names the programs left on plain TCP and why, once a window', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'smc-plain-'));
    // A real program of this machine holding a TCP connection without the library: a node child.
    const server = (await import('node:net')).createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const child = spawn(
      process.execPath,
      [
        '-e',
        `require('net').connect(${(server.address() as { port: number }).port}, '127.0.0.1', () => console.log('up')); setInterval(() => {}, 1000)`,
      ],
      { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    try {
      await once(child.stdout!, 'data');
      const state = join(dir, 'state');
      mkdirSync(state);
      // The pod's netns is this test's own: the record names it as the agent reaches it.
      writeFileSync(
        join(state, 'c1_eth0.json'),
        JSON.stringify({
          podNamespace: 'apps',
          podName: 'web',
          podUid: 'uid-web',
          netns: '/proc/self/ns/net',
          mechanism: 'preload',
        }),
      );
      const summary = smcSummary({ plainTcp: 1 });
      const binary = {
        smcSummaries: async (paths: readonly string[]) => new Map(paths.map((p) => [p, summary])),
      } as unknown as NativeBinary;
      const clock = new ManualClock();
      const events = new Events();
      const duty = new SmcDuty({
        binary,
        stateDir: state,
        hostRoot: '/',
        procRoot: '/proc',
        pods: () => [smcrPod('web', 'uid-web', clock.t)],
        fallbackEventMs: 60_000,
        events,
        metrics: new AgentMetrics({ defaultMetrics: false }),
        clock,
        logger: pino({ level: 'silent' }),
      });
      await duty.pass();
      expect(events.told.map((e) => [e.about, e.what.reason])).toEqual([
        ['apps/web', 'SMCRPlainTcp'],
      ]);
      expect(events.told[0]!.what.message).toMatch(
        new RegExp(
          `node \\(pid ${child.pid}, 1 connection\\(s\\)\\) runs without the library in LD_PRELOAD`,
        ),
      );
      expect(duty.last[0]!.plainTcpPrograms).toContainEqual({
        pid: child.pid,
        comm: 'node',
        connections: 1,
        cause: 'cleared',
      });
      await duty.pass();
      expect(events.told).toHaveLength(1);
    } finally {
      child.kill('SIGKILL');
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
