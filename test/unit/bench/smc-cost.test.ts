// The rows `npm run bench smc-cost` makes of the cost scenario's records (test/smcr-vm/cost.sh):
// ratios to the plain TCP of the same boot, and what the client's SMC counters say of each case.
import { describe, expect, it } from 'vitest';
import { costRows } from '../../../bench/smc-cost.js';
import { records } from '../../helpers/vm.js';

const stats = (smcr: number, reasons: [string, number][] = []): string =>
  JSON.stringify({
    stats: { available: true, counters: { smcr: { clientSuccessV1: 0, clientSuccessV2: smcr } } },
    fallbacks: {
      available: true,
      reasons: reasons.map(([reason, count]) => ({ side: 'client', reason, count })),
    },
  });

const output = [
  'SMCRVM cost mech=bpf case=tcp mode=connect n=4 p50_us=100 p99_us=200 mean_us=110 cpu_us_per=50.0 proto=tcp',
  'SMCRVM cost mech=bpf case=tcp mode=rr n=4 p50_us=200 p99_us=400 mean_us=210 cpu_us_per=60.0 proto=tcp',
  `SMCRVM coststats mech=bpf case=tcp stats=${stats(0)}`,
  'SMCRVM cost mech=bpf case=smcr mode=connect n=4 p50_us=300 p99_us=600 mean_us=310 cpu_us_per=150.0 proto=smc',
  'SMCRVM cost mech=bpf case=smcr mode=rr n=4 p50_us=500 p99_us=900 mean_us=510 cpu_us_per=160.0 proto=smc',
  `SMCRVM coststats mech=bpf case=smcr stats=${stats(11)}`,
  'SMCRVM cost mech=bpf case=decline mode=connect n=4 p50_us=250 p99_us=500 mean_us=260 cpu_us_per=90.0 proto=smc',
  'SMCRVM cost mech=bpf case=decline mode=rr n=4 p50_us=400 p99_us=800 mean_us=410 cpu_us_per=95.0 proto=smc',
  `SMCRVM coststats mech=bpf case=decline stats=${stats(11, [['0x03030000', 11]])}`,
  'SMCRVM cost mech=bpf case=tcp2 mode=connect n=4 p50_us=110 p99_us=210 mean_us=110 cpu_us_per=50.0 proto=tcp',
  'SMCRVM cost mech=bpf case=tcp mode=bulk bytes=16777216 us=1000 mbps=800.0 cpu_us=900 proto=tcp',
  'SMCRVM cost mech=bpf case=smcr mode=bulk bytes=16777216 us=1000 mbps=400.0 cpu_us=700 proto=smc',
].join('\n');

describe('the smc-cost rows', () => {
  const rows = costRows('trixie', records(output));

  it('gives each case its time as a ratio of plain TCP in the same boot', () => {
    const connect = rows.filter((r) => r.case.includes(', connect,'));
    expect(connect.map((r) => [r.case.split(': ')[1]!.split(',')[0], r.value, r.ratio])).toEqual([
      ['plain TCP (baseline)', 100, 1],
      ['SMC-R client → SMC-R pod', 300, 3],
      ['SMC-R client → SMC pod with no shared RDMA device (declined)', 250, 2.5],
    ]);
    expect(connect[0]!.extra).toContain('again after the cases: p50 110 µs');
    expect(connect[1]!.extra).toContain('client CPU 150 µs a connection (3.00×)');
  });

  it("says what the client's counters moved by over each case", () => {
    const rr = rows.filter((r) => r.case.includes('exchange'));
    expect(rr[1]!.extra).toContain('its counters over the case: 11 SMC-R');
    expect(rr[2]!.extra).toContain('its counters over the case: 0 SMC-R, 11 fell back 0x03030000');
  });

  it('gives the bulk transfer as a ratio of throughput', () => {
    const bulk = rows.find((r) => r.unit === 'Mbit/s')!;
    expect(bulk).toMatchObject({ value: 400, ratio: 0.5 });
    expect(bulk.case).toContain('16 MiB');
  });

  it('gives no rows for a boot with no timings', () => {
    expect(costRows('bookworm', records('SMCRVM DONE ok'))).toEqual([]);
  });
});
