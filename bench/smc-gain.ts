// What SMC gives two pods of one node (`npm run bench smc-gain`), against plain TCP between two
// plain pods in the same boot. Two boots of Debian trixie's 6.12 (test/smcr-vm/gain.sh): with smc
// built with loopback-ism (SMC-D through shared memory, what Alibaba Cloud Linux 4's kernel offers)
// and with Debian's own smc (SMC-R over Soft-RoCE, the rows beside them for honesty). Per boot, with
// test/smcr-vm/smc-cost.c: bulk transfers of several sizes on one connection, request/response of
// 1 byte and 16 KiB on one long-lived connection (p50/p99), short connections (a new one per
// 100-byte exchange), and the sending client's CPU per GiB. The annotated pairs run with the
// kernel's default SMC buffers (64 KiB) and with 1 MiB (the smcr.erdma.io/wmem and rmem
// annotations), and 4 MiB; TCP runs first and last, and the baseline is the mean of the two.
// ERDMA_SMCR_BENCH_SMC_GAIN_BOOTS=lo (or stock) runs one boot only.
//
// The VM runs under TCG: absolute numbers say nothing of a real node; the ratios compare two
// kernel paths on the same emulated CPU. Soft-RoCE is software: its SMC-R rows say nothing of eRDMA.
import { bootVm, type VmRecord } from '../test/helpers/vm.js';
import type { BenchRow } from './report.js';

/** Exchanges for the 1-byte request/response (a third of them at 16 KiB, a tenth as connections). */
const N = Number(process.env.ERDMA_SMCR_BENCH_SMC_GAIN_N ?? 3000);
/** Bulk sizes in bytes. */
const SIZES = (process.env.ERDMA_SMCR_BENCH_SMC_GAIN_SIZES ?? '16777216,268435456,1073741824')
  .split(',')
  .map(Number);

const PAIRS: Readonly<Record<string, string>> = {
  smc: 'default SMC buffers (64 KiB)',
  smc1m: '1 MiB SMC buffers (smcr.erdma.io/wmem, rmem)',
  smc4m: '4 MiB SMC buffers',
};

type Run = VmRecord & { pair: string; mode: string };

const GIB = 2 ** 30;
const mib = (b: number): string => (b >= GIB ? `${b / GIB} GiB` : `${b / 2 ** 20} MiB`);

/** The transport SMC's counters in the client pod say the pair used (after its cases). */
function transport(lines: readonly VmRecord[], pair: string): string {
  const rec = lines.find((l) => l.pair === pair && l.stats !== undefined);
  if (!rec?.stats) return '?';
  const c = (
    JSON.parse(rec.stats) as {
      stats?: { counters?: Record<string, { clientSuccessV1?: number; clientSuccessV2?: number }> };
    }
  ).stats?.counters;
  const n = (t: string): number => (c?.[t]?.clientSuccessV1 ?? 0) + (c?.[t]?.clientSuccessV2 ?? 0);
  return `${n('smcd')} SMC-D, ${n('smcr')} SMC-R connections`;
}

/** Mean of the two TCP runs (first and last of the boot) for a mode and, for bulk, a size. */
function baseline(runs: readonly Run[], pick: (r: Run) => boolean, key: string): number {
  const xs = runs.filter((r) => (r.pair === 'tcp' || r.pair === 'tcp2') && pick(r));
  return xs.reduce((s, r) => s + Number(r[key]), 0) / Math.max(xs.length, 1);
}

/** The rows of one boot: SMC (transport), per pair, against plain TCP of the same boot. */
export function gainRows(label: string, lines: readonly VmRecord[]): BenchRow[] {
  const runs = lines.filter((l): l is Run => l.pair !== undefined && l.mode !== undefined);
  const rows: BenchRow[] = [];
  const spread = (pick: (r: Run) => boolean, key: string): string => {
    const [a, b] = ['tcp', 'tcp2'].map((p) => runs.find((r) => r.pair === p && pick(r))?.[key]);
    return `plain TCP ${a ?? '?'} then ${b ?? '?'}`;
  };
  for (const [pair, what] of Object.entries(PAIRS)) {
    const via = transport(lines, pair);
    for (const size of SIZES) {
      const pick = (r: Run): boolean => r.mode === 'bulk' && Number(r.bytes) === size;
      const r = runs.find((x) => x.pair === pair && pick(x));
      if (!r) continue;
      const base = baseline(runs, pick, 'mbps');
      const cpu = (Number(r.cpu_us) / 1e6) * (GIB / size);
      const baseCpu = (baseline(runs, pick, 'cpu_us') / 1e6) * (GIB / size);
      rows.push({
        bench: 'smc-gain',
        case: `${label}, ${what}: bulk ${mib(size)} on one connection (× plain TCP's throughput)`,
        value: Number(r.mbps),
        unit: 'Mbit/s',
        ratio: Number(r.mbps) / base,
        extra: `${spread(pick, 'mbps')} Mbit/s; sender CPU ${cpu.toFixed(2)} s/GiB (plain ${baseCpu.toFixed(2)}, ${(cpu / baseCpu).toFixed(2)}×); ${via}`,
      });
    }
    for (const size of [1, 16384]) {
      const pick = (x: Run): boolean => x.mode === 'pingpong' && Number(x.size) === size;
      const r = runs.find((x) => x.pair === pair && pick(x));
      if (!r) continue;
      const base = baseline(runs, pick, 'p50_us');
      rows.push({
        bench: 'smc-gain',
        case: `${label}, ${what}: request/response ${size === 1 ? '1 B' : '16 KiB'} on a long-lived connection, p50 (× plain TCP's time)`,
        value: Number(r.p50_us),
        unit: 'µs',
        ratio: Number(r.p50_us) / base,
        extra: `p99 ${r.p99_us} µs (plain ${baseline(runs, pick, 'p99_us').toFixed(0)}); ${spread(pick, 'p50_us')} µs p50; client CPU ${r.cpu_us_per} µs an exchange`,
      });
    }
    const pick = (x: Run): boolean => x.mode === 'rr';
    const r = runs.find((x) => x.pair === pair && pick(x));
    if (r) {
      const perSec = 1e6 / Number(r.mean_us);
      const base = 1e6 / baseline(runs, pick, 'mean_us');
      rows.push({
        bench: 'smc-gain',
        case: `${label}, ${what}: short connections (connect, 100 B each way, close) per second (× plain TCP's rate)`,
        value: perSec,
        unit: 'conn/s',
        ratio: perSec / base,
        extra: `p50 ${r.p50_us} µs, p99 ${r.p99_us} µs; plain TCP ${base.toFixed(0)}/s`,
      });
    }
  }
  return rows;
}

export async function benchSmcGain(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const boots = (process.env.ERDMA_SMCR_BENCH_SMC_GAIN_BOOTS ?? 'lo,stock').split(',');
  for (const [smc, label] of [
    ['lo', 'SMC-D (loopback-ism), trixie 6.12'],
    ['stock', 'SMC-R (Soft-RoCE), trixie 6.12'],
  ] as const) {
    if (!boots.includes(smc)) continue;
    const vm = await bootVm({
      kernel: 'trixie',
      smc,
      append: `smcr_scenario=gain smcr_gain_n=${N} smcr_gain_sizes=${SIZES.join(',')}`,
      watchdogSec: 1800,
    });
    const failed = vm.lines.find((l) => l.FAIL !== undefined);
    if (failed || !vm.lines.some((l) => l.DONE === 'ok'))
      throw new Error(
        `the gain scenario (${smc}) did not finish (${failed?.FAIL ?? vm.summary}):\n${vm.consoleText.slice(-3000)}`,
      );
    const got = gainRows(label, vm.lines);
    if (got.length === 0) throw new Error(`no timings (${smc}):\n${vm.consoleText.slice(-3000)}`);
    rows.push(...got);
  }
  return rows;
}
