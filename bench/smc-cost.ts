// What SMC costs a pod's connections (`npm run bench smc-cost`), in the SMC-R test VM on each
// kernel the suites boot (Debian's 6.1, 6.12, and the newest line built with SMC) and for each
// mechanism the kernel offers (the IPPROTO_SMC BPF program on 6.12 and 7.x; the preload library on
// all; no Debian kernel has Alibaba's net.smc.tcp2smc), with and without the SMC selection (#93). test/smcr-vm/cost.sh times, with test/smcr-vm/smc-cost.c, N connects and N
// short exchanges (a new connection, 100 bytes each way) from an SMC-R client pod to: an SMC-R pod
// (smcr), a pod without SMC (nosmc), an SMC pod that shares no RDMA device with it (decline); and
// from a plain client to the SMC-R pod (server: what its SMC listener costs clients that cannot use
// it). Each against plain TCP between plain pods in the same boot; one bulk transfer for smcr.
//
// The VM runs under TCG with Soft-RoCE standing in for eRDMA: its times say nothing of eRDMA's
// speed. What carries over is the ratios of the connections that cannot use SMC-R (nosmc,
// decline, server) to plain TCP, and the CPU a connection costs its client.
import { bootVm, type VmRecord } from '../test/helpers/vm.js';
import type { BenchRow } from './report.js';

/** Connections per case and mode (ERDMA_SMCR_BENCH_SMC_COST_N). */
const N = Number(process.env.ERDMA_SMCR_BENCH_SMC_COST_N ?? 300);
const KERNELS = ['bookworm', 'trixie', 'newest'] as const;

const CASES: Readonly<Record<string, string>> = {
  smcr: 'SMC-R client → SMC-R pod',
  nosmc: 'SMC-R client → pod without SMC',
  decline: 'SMC-R client → SMC pod with no shared RDMA device (declined)',
  server: 'plain client → SMC-R pod (its SMC listener)',
  loopback:
    'SMC-R client → a server in its own pod over 127.0.0.1 (falls back: no device serves lo)',
  loopback_nb:
    'SMC-R client → a server in its own pod over 127.0.0.1, connecting as an event loop does (non-blocking, then poll)',
  // With the SMC selection on (#93), where the mechanism enforces it.
  sel_smcr: 'selection on: → SMC-R pod on a selected port',
  sel_excluded: 'selection on: → SMC-R pod on an excluded port',
  sel_outside: "selection on: → a peer outside the selection's networks",
  sel_decline: 'selection on: → SMC pod with no shared RDMA device, on an excluded port',
};

interface Timing {
  readonly p50: number;
  readonly p99: number;
  readonly cpu: number;
  readonly proto: string;
}

/** The SMC counters of a record's `stats` (`erdma-smcr smc stats`): SMC-R successes and fallbacks. */
function counts(rec: VmRecord | undefined): { smcr: number; fallbacks: Map<string, number> } {
  const fallbacks = new Map<string, number>();
  if (!rec?.stats) return { smcr: 0, fallbacks };
  const s = JSON.parse(rec.stats) as {
    stats?: { counters?: { smcr?: { clientSuccessV1?: number; clientSuccessV2?: number } } };
    fallbacks?: { reasons?: { side: string; reason: string; count: number }[] };
  };
  const r = s.stats?.counters?.smcr;
  for (const f of s.fallbacks?.reasons ?? [])
    if (f.side === 'client') fallbacks.set(f.reason, (fallbacks.get(f.reason) ?? 0) + f.count);
  return { smcr: (r?.clientSuccessV1 ?? 0) + (r?.clientSuccessV2 ?? 0), fallbacks };
}

/** What the client's counters moved by over one case: SMC-R connections, and fallbacks by reason. */
function moved(before: VmRecord | undefined, after: VmRecord | undefined): string {
  const a = counts(before);
  const b = counts(after);
  const reasons = [...b.fallbacks]
    .map(([code, n]) => [code, n - (a.fallbacks.get(code) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .map(([code, n]) => `${n} fell back ${code}`);
  return [`${b.smcr - a.smcr} SMC-R`, ...reasons].join(', ');
}

const us = (v: number): string => `${Math.round(v).toLocaleString('en-US')} µs`;

/** The rows of one boot: per mechanism, the baseline and each case, connect and exchange, and bulk. */
export function costRows(kernel: string, lines: readonly VmRecord[]): BenchRow[] {
  const runs = lines.filter((l) => l.mech !== undefined && l.mode !== undefined);
  const stats = lines.filter((l) => l.mech !== undefined && l.stats !== undefined && l.case);
  const rows: BenchRow[] = [];
  for (const mech of [...new Set(runs.map((r) => r.mech!))]) {
    const timing = (c: string, mode: string): Timing | undefined => {
      const r = runs.find((x) => x.mech === mech && x.case === c && x.mode === mode);
      return r
        ? { p50: +r.p50_us!, p99: +r.p99_us!, cpu: +r.cpu_us_per!, proto: r.proto ?? '?' }
        : undefined;
    };
    const stat = (c: string): VmRecord | undefined =>
      stats.find((s) => s.mech === mech && s.case === c);
    for (const mode of ['connect', 'rr'] as const) {
      const base = timing('tcp', mode);
      const again = timing('tcp2', mode);
      if (!base) continue;
      const what = mode === 'connect' ? 'connect' : '100-byte exchange on a new connection';
      rows.push({
        bench: 'smc-cost',
        case: `${kernel}, ${mech}: plain TCP (baseline), ${what}, p50`,
        value: base.p50,
        unit: 'µs',
        ratio: 1,
        extra: `p99 ${us(base.p99)}; client CPU ${us(base.cpu)} a connection; again after the cases: p50 ${again ? us(again.p50) : '?'}`,
      });
      // Cases of the SMC-R client, in the order they ran: counters move from the previous one.
      let prev = stat('tcp');
      for (const c of Object.keys(CASES)) {
        const t = timing(c, mode);
        if (!t) continue;
        const s = stat(c);
        const client = c === 'server' ? '' : `; client's socket ${t.proto}`;
        const counters =
          mode === 'rr' && c !== 'server' ? `; its counters over the case: ${moved(prev, s)}` : '';
        if (c !== 'server' && s) prev = s;
        rows.push({
          bench: 'smc-cost',
          case: `${kernel}, ${mech}: ${CASES[c]}, ${what}, p50 (× plain TCP's time)`,
          value: t.p50,
          unit: 'µs',
          ratio: t.p50 / base.p50,
          extra: `p99 ${us(t.p99)} (${(t.p99 / base.p99).toFixed(2)}×); client CPU ${us(t.cpu)} a connection (${(t.cpu / base.cpu).toFixed(2)}×)${client}${counters}`,
        });
      }
    }
    const bulk = (c: string): VmRecord | undefined =>
      runs.find((x) => x.mech === mech && x.case === c && x.mode === 'bulk');
    const bt = bulk('tcp');
    const bs = bulk('smcr');
    if (bt && bs)
      rows.push({
        bench: 'smc-cost',
        case: `${kernel}, ${mech}: SMC-R client → SMC-R pod, ${(+bs.bytes! / 2 ** 20).toFixed(0)} MiB on one connection (× plain TCP's throughput)`,
        value: +bs.mbps!,
        unit: 'Mbit/s',
        ratio: +bs.mbps! / +bt.mbps!,
        extra: `plain TCP ${(+bt.mbps!).toFixed(0)} Mbit/s; client CPU ${us(+bs.cpu_us!)} (plain ${us(+bt.cpu_us!)}); socket ${bs.proto}; Soft-RoCE under TCG: says nothing of eRDMA's speed`,
      });
  }
  return rows;
}

export async function benchSmcCost(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const kernel of KERNELS) {
    const vm = await bootVm({
      kernel,
      append: `smcr_scenario=cost smcr_cost_n=${N}`,
      watchdogSec: 1500,
    });
    const failed = vm.lines.find((l) => l.FAIL !== undefined);
    if (failed || !vm.lines.some((l) => l.DONE === 'ok'))
      throw new Error(
        `the cost scenario on ${kernel} did not finish (${failed?.FAIL ?? vm.summary}):\n${vm.consoleText.slice(-3000)}`,
      );
    const got = costRows(kernel, vm.lines);
    if (got.length === 0)
      throw new Error(`no timings from ${kernel}:\n${vm.consoleText.slice(-3000)}`);
    rows.push(...got);
  }
  rows.push({
    bench: 'smc-cost',
    case: 'tcp2smc (net.smc.tcp2smc)',
    value: 0,
    unit: 'skipped',
    target:
      "no Debian kernel has it (Alibaba Cloud Linux 3's kernels do): its socket is the same SMC socket the BPF program gives, so the same costs are expected",
  });
  return rows;
}
