// What the pod scenarios of the SMC test VM print (test/smcr-vm/pods.sh), read back: the shapes of
// our binary's JSON, the runtimes each scenario runs, and the checks both the SMC-R and the SMC-D
// suites make of a case.
import { expect } from 'vitest';
import type { VmRun } from './vm.js';

export interface Socket {
  state: string;
  mode: string;
  local: string;
  peer: string;
  link?: { dev: string; role: string };
}
export interface Summary {
  summary: {
    sockets: number;
    byMode: { SMCR: number; SMCD: number; TCP: number };
    plainTcp: number;
  };
}

export interface SockLoop {
  sockets: number;
  smc: number;
  tcp: number;
  failed: number;
  combos: { family: string; flags: string; protocol: number; smc: number; tcp: number }[];
}
export interface BpfStatus {
  progId?: number;
  tag?: string;
  loaded: boolean;
  netns: { cookie: number; switched: number }[];
}
/** SMC's two transports, as its statistics name them: over RDMA, and over shared memory (ISM). */
export type Tech = 'smcr' | 'smcd';

export interface Stats {
  stats: { counters: Record<Tech, Record<string, number>> };
  fallbacks: { reasons: { side: string; reason: string; count: number }[] };
}

/** The programs of each runtime (test/smcr-vm/transparent.sh `runtime`): connections the client holds. */
export const RUNTIMES = [
  {
    key: 'go',
    name: 'a static Go program (net/http)',
    static: true,
    conns: 1,
    output: /got 4194304 bytes/,
  },
  {
    key: 'python',
    name: "CPython's http.server and urllib",
    static: false,
    conns: 1,
    output: /got 4194304 bytes/,
  },
  {
    key: 'node',
    name: 'Node.js (node:http)',
    static: false,
    conns: 1,
    output: /got 4194304 bytes/,
  },
  {
    key: 'redis',
    name: 'redis-server under redis-benchmark',
    static: false,
    conns: 4,
    output: /GET: rps=/,
  },
] as const;

/** What SMC's counters (of transport TECH) in POD's netns moved during the case LABEL. */
export function statsDelta(
  vm: VmRun,
  label: string,
  pod: string,
  tech: Tech = 'smcr',
): { successes: number; fallbacks: number; bytes: number } {
  const at = (when: string): Stats => vm.json(`${label}_stats_${when}_${pod}`) as Stats;
  const sum = (s: Stats, keys: string[]): number =>
    keys.reduce((n, k) => n + (s.stats.counters[tech]?.[k] ?? 0), 0);
  const ok = ['clientSuccessV1', 'clientSuccessV2', 'serverSuccessV1', 'serverSuccessV2'];
  const fb = (s: Stats): number => s.fallbacks.reasons.reduce((n, r) => n + r.count, 0);
  const [b, a] = [at('before'), at('after')];
  return {
    successes: sum(a, ok) - sum(b, ok),
    fallbacks: fb(a) - fb(b),
    bytes: sum(a, ['txBytes', 'rxBytes']) - sum(b, ['txBytes', 'rxBytes']),
  };
}

/** The case's connections were plain TCP at both ends: no SMC socket, SMC's counters still. */
export function expectTcp(
  vm: VmRun,
  label: string,
  client: string,
  server: string,
  conns: number,
): void {
  for (const pod of [client, server]) {
    const socks = (vm.json(`${label}_sockets_${pod}`) as Socket[]).filter(
      (x) => x.state !== 'LISTEN',
    );
    expect(socks, `${label} in ${pod}`).toEqual([]);
    const sum = (vm.json(`${label}_summary_${pod}`) as Summary).summary;
    expect(sum.sockets).toBe(0);
    expect(sum.plainTcp, `${label} in ${pod}`).toBeGreaterThanOrEqual(conns);
    for (const tech of ['smcr', 'smcd'] as const)
      expect(statsDelta(vm, label, pod, tech).successes, `${label} ${tech} in ${pod}`).toBe(0);
  }
}

/** The VM ran every step of its scenario, to DONE, on the kernel asked for (the console's tail when not). */
export function expectRanEveryStep(vm: VmRun, release: RegExp): void {
  expect(
    vm.lines.filter((r) => 'FAIL' in r),
    vm.consoleText.slice(-3000),
  ).toEqual([]);
  expect(vm.find((r) => 'DONE' in r).DONE).toBe('ok');
  expect(vm.find((r) => 'kernel' in r).kernel).toMatch(release);
}
