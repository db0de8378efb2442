// What real programs get from SMC, and what the preload library costs an event loop
// (`npm run bench apps`, #99). test/smcr-vm/appbench.sh runs Debian's nginx, redis-server,
// redis-benchmark and wrk, unmodified, between pods of the SMC-R test VM:
// - on Debian's 6.1 (the preload library): nginx proxying wrk's requests with a new upstream
//   connection per request, without the library, under it with the upstream's port excluded, and
//   under it selected (the targets: excluded ≥ 0.95× without); then redis and nginx over SMC-R
//   (Soft-RoCE standing in for eRDMA, "two nodes' pods") against plain TCP in the same boot;
// - on Debian's newest line built with SMC (the IPPROTO_SMC program): the same over SMC-D
//   (loopback-ism: two pods of one node).
// Every mode runs in each of ROUNDS interleaved rounds; a row gives the median and the spread.
//
// The VM runs under TCG (an emulated CPU, 2 vCPUs) with Soft-RoCE: absolute figures say nothing of
// eRDMA. SMC-R over Soft-RoCE moves every byte through the emulated CPU twice more than TCP does,
// so its ratio is a floor, not a forecast; SMC-D's ratio and the library's overhead on excluded
// connections (the same CPU, the same syscalls but the library's own) carry over best.
import { bootVm, type VmRecord } from '../test/helpers/vm.js';
import { median, type BenchRow } from './report.js';

const SECS = Number(process.env.ERDMA_SMCR_BENCH_APPS_SECS ?? 10);
const ROUNDS = Number(process.env.ERDMA_SMCR_BENCH_APPS_ROUNDS ?? 3);

/** wrk's latency ("812.00us", "1.23ms", "2.01s") in µs. */
export function wrkMicros(text: string | undefined): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text ?? '');
  if (!m) return NaN;
  return Number(m[1]) * (m[2] === 'us' ? 1 : m[2] === 'ms' ? 1000 : 1_000_000);
}

const spread = (xs: readonly number[]): string =>
  xs.length > 1
    ? `rounds ${xs.map((x) => Math.round(x).toLocaleString('en-US')).join(', ')}`
    : 'one round';

/** SMC connections (successes of both transports) the client's counters moved by over one run. */
function smcConnections(rec: VmRecord | undefined): number {
  if (!rec?.before || !rec.after) return 0;
  const sum = (text: string): number => {
    const s = JSON.parse(text) as {
      stats?: { counters?: Record<string, Record<string, number> | undefined> };
    };
    let n = 0;
    for (const tech of ['smcr', 'smcd'])
      for (const k of ['clientSuccessV1', 'clientSuccessV2'])
        n += s.stats?.counters?.[tech]?.[k] ?? 0;
    return n;
  };
  return sum(rec.after) - sum(rec.before);
}

/** The rows of one boot. */
export function appRows(kernel: string, transport: string, lines: readonly VmRecord[]): BenchRow[] {
  // The result lines ("appbench case=..."), not the counters beside them ("appbench_stats ...").
  const runs = lines.filter(
    (l) => l.case !== undefined && l.mode !== undefined && l.round && l.before === undefined,
  );
  const stats = lines.filter((l) => l.before !== undefined && l.case !== undefined);
  const of = (c: string, mode: string): VmRecord[] =>
    runs.filter((r) => r.case === c && r.mode === mode);
  const conns = (c: string, mode: string): number =>
    Math.min(...stats.filter((s) => s.case === c && s.mode === mode).map(smcConnections));
  const rows: BenchRow[] = [];

  const proxy = (mode: string): { rps: number[]; p99: number[] } => {
    const rs = of('proxy', mode);
    return { rps: rs.map((r) => +r.rps!), p99: rs.map((r) => wrkMicros(r.p99)) };
  };
  const none = proxy('none');
  if (none.rps.length > 0) {
    const base = median(none.rps);
    const baseP99 = median(none.p99);
    rows.push({
      bench: 'apps',
      case: `${kernel}: nginx proxy, an upstream connect per request, without the library (baseline), requests/s`,
      value: base,
      unit: 'req/s',
      ratio: 1,
      extra: `p99 ${Math.round(baseP99).toLocaleString('en-US')} µs; ${spread(none.rps)}`,
    });
    for (const [mode, what, target] of [
      ['excluded', "under the library, the upstream's port excluded", '≥ 0.95×'],
      ['selected', 'under the library, selected (SMC-R per request)', 'reported'],
    ] as const) {
      const m = proxy(mode);
      if (m.rps.length === 0) continue;
      rows.push({
        bench: 'apps',
        case: `${kernel}: nginx proxy, an upstream connect per request, ${what}, requests/s (× without)`,
        value: median(m.rps),
        unit: 'req/s',
        ratio: median(m.rps) / base,
        target,
        extra: `p99 ${Math.round(median(m.p99)).toLocaleString('en-US')} µs (${(median(m.p99) / baseP99).toFixed(2)}×); SMC connections in a run: ${conns('proxy', mode)}; ${spread(m.rps)}`,
      });
    }
  }

  for (const [key, what] of [
    ['set_rps', 'redis-benchmark SET, 1 KiB values'],
    ['get_rps', 'redis-benchmark GET, 1 KiB values'],
  ] as const) {
    const tcp = of('redis', 'tcp').map((r) => +r[key]!);
    const smc = of('redis', 'smc').map((r) => +r[key]!);
    if (tcp.length === 0 || smc.length === 0) continue;
    rows.push({
      bench: 'apps',
      case: `${kernel}: ${what}, ${transport} (× plain TCP in the same boot)`,
      value: median(smc),
      unit: 'req/s',
      ratio: median(smc) / median(tcp),
      extra: `plain TCP ${Math.round(median(tcp)).toLocaleString('en-US')} req/s; SMC connections: ${conns('redis', 'smc')}; SMC ${spread(smc)}; TCP ${spread(tcp)}`,
    });
  }
  const wt = of('nginx', 'tcp');
  const ws = of('nginx', 'smc');
  if (wt.length > 0 && ws.length > 0) {
    const t = median(wt.map((r) => +r.rps!));
    const s = median(ws.map((r) => +r.rps!));
    rows.push({
      bench: 'apps',
      case: `${kernel}: wrk → nginx, 1 KiB responses on keep-alive connections, ${transport} (× plain TCP)`,
      value: s,
      unit: 'req/s',
      ratio: s / t,
      extra: `plain TCP ${Math.round(t).toLocaleString('en-US')} req/s; p99 ${Math.round(median(ws.map((r) => wrkMicros(r.p99)))).toLocaleString('en-US')} µs vs ${Math.round(median(wt.map((r) => wrkMicros(r.p99)))).toLocaleString('en-US')} µs; SMC connections: ${conns('nginx', 'smc')}`,
    });
  }
  return rows;
}

export async function benchApps(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const [kernel, transport] of [
    ['bookworm', 'SMC-R over Soft-RoCE (preload)'],
    ['newest', 'SMC-D over loopback-ism (IPPROTO_SMC)'],
  ] as const) {
    const vm = await bootVm({
      kernel,
      append: `smcr_scenario=appbench smcr_appbench_secs=${SECS} smcr_appbench_rounds=${ROUNDS}`,
      watchdogSec: 1800,
      // ERDMA_SMCR_VM_CONSOLE=DIR keeps the boot's console, every raw line, to read again.
      ...(process.env.ERDMA_SMCR_VM_CONSOLE
        ? { consoleFile: `${process.env.ERDMA_SMCR_VM_CONSOLE}/appbench-${kernel}.log` }
        : {}),
    });
    const failed = vm.lines.find((l) => l.FAIL !== undefined);
    if (failed || !vm.lines.some((l) => l.DONE === 'ok'))
      throw new Error(
        `the appbench scenario on ${kernel} did not finish (${failed?.FAIL ?? vm.summary}):\n${vm.consoleText.slice(-3000)}`,
      );
    const got = appRows(kernel, transport, vm.lines);
    if (got.length === 0)
      throw new Error(`no results from ${kernel}:\n${vm.consoleText.slice(-3000)}`);
    rows.push(...got);
  }
  return rows;
}
