// The agent's SMC sampling cost: one pass over 100 SMC-R pods, in the SMC-R test VM (Debian's 6.1
// kernel with smc and smc_diag; this machine's kernel has no SMC). test/smcr-vm/init.sh, booted
// with smcr_bench=100, gives 100 network namespaces an open AF_SMC connection and its listener
// each, then measures the CPU time (user + system, clock ticks of 10 ms) of reading them all the
// way the agent does (one `smc summary` call with 100 --netns) against one call per namespace
// (the baseline, measured in the same boot), three rounds each. The VM runs under TCG (emulated
// CPU), so the absolute times are an upper bound of what a real node spends.
import { bootVm } from '../test/helpers/vm.js';
import { median, type BenchRow } from './report.js';

const PODS = 100;
const INTERVAL_S = 30; // agent.smcSampleMs default

export async function benchSmc(): Promise<BenchRow[]> {
  // The same VM the kernel tests boot (test/helpers/vm.ts), in benchmark mode.
  const vm = await bootVm({ append: `smcr_bench=${PODS}` });
  const out = vm.consoleText;
  const check = /SMCRVM bench_check=(\d+)/.exec(out)?.[1];
  if (check !== String(PODS))
    throw new Error(
      `the VM did not set up ${PODS} namespaces with an open connection each (saw ${check ?? 'none'}):\n${out.slice(-3000)}`,
    );
  const rounds = [
    ...out.matchAll(/SMCRVM bench_round=\d+ pods=\d+ batch_ticks=(\d+) each_ticks=(\d+) hz=(\d+)/g),
  ].map((m) => ({
    batchMs: (Number(m[1]) * 1000) / Number(m[3]),
    eachMs: (Number(m[2]) * 1000) / Number(m[3]),
  }));
  if (rounds.length === 0)
    throw new Error(`no benchmark rounds in the VM output:\n${out.slice(-3000)}`);
  const each = median(rounds.map((r) => r.eachMs));
  const batch = median(rounds.map((r) => r.batchMs));
  const spread = (f: (r: { batchMs: number; eachMs: number }) => number): string =>
    rounds.map((r) => f(r).toFixed(0)).join(' / ');
  return [
    {
      bench: 'smc',
      case: `one native call per pod (baseline), ${PODS} pods with an open SMC connection`,
      value: each,
      unit: 'ms CPU per pass',
      ratio: 1,
      extra: `rounds ${spread((r) => r.eachMs)} ms; TCG VM`,
    },
    {
      bench: 'smc',
      case: `the agent's pass: one call for all ${PODS} pods`,
      value: batch,
      unit: 'ms CPU per pass',
      ratio: each / Math.max(batch, 1e-9),
      target: `< 1% of a core at ${INTERVAL_S} s (${(INTERVAL_S * 10).toFixed(0)} ms per pass): ${((batch / (INTERVAL_S * 1000)) * 100).toFixed(2)}%`,
      extra: `rounds ${spread((r) => r.batchMs)} ms; 10 ms ticks, TCG VM (an upper bound)`,
    },
  ];
}
