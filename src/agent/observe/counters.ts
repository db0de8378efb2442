// RDMA device traffic, as `eadm stat` shows it: the hardware counters the driver exposes in sysfs
// (/sys/class/infiniband/DEV/ports/N/hw_counters/, or DEV/hw_counters/ for device-wide ones).
// Three naming schemes, all read:
// - the upstream erdma driver: tx_bytes_cnt, rx_bytes_cnt, tx_packets_cnt, rx_packets_cnt and the
//   tx_/rx_*drop_cnt counters;
// - Alibaba's out-of-tree erdma driver: the same with an hw_ prefix (hw_tx_bytes_cnt, ...), its
//   transmit drops without a direction (hw_disable_drop_cnt, hw_bps_limit_drop_cnt, ...);
// - Soft-RoCE (rdma_rxe, the test stand-in): sent_pkts and rcvd_pkts, no byte counters.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PortCounters } from '../metrics.js';
import { sysClass } from '../host.js';

function readCounters(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    try {
      const v = Number(readFileSync(join(dir, name), 'utf8').trim());
      if (Number.isFinite(v)) out.set(name, v);
    } catch {
      // unreadable (or a directory): skip
    }
  }
  return out;
}

/** Normalises one set of raw counters. */
export function normalize(
  device: string,
  port: number,
  raw: ReadonlyMap<string, number>,
): PortCounters {
  const outOfTree = [...raw.keys()].some((k) => k.startsWith('hw_') && k.endsWith('_cnt'));
  const get = (k: string): number | undefined => raw.get(outOfTree ? `hw_${k}` : k);
  if (get('tx_bytes_cnt') !== undefined || get('tx_packets_cnt') !== undefined) {
    let txDrops = 0;
    let rxDrops = 0;
    for (const [k, v] of raw) {
      const name = outOfTree ? k.replace(/^hw_/, '') : k;
      if (!/drop_cnt$/.test(name)) continue;
      if (name.startsWith('rx_')) rxDrops += v;
      else txDrops += v;
    }
    return {
      device,
      port,
      scheme: outOfTree ? 'erdma-out-of-tree' : 'erdma',
      ...num('txBytes', get('tx_bytes_cnt')),
      ...num('rxBytes', get('rx_bytes_cnt')),
      ...num('txPackets', get('tx_packets_cnt')),
      ...num('rxPackets', get('rx_packets_cnt')),
      txDrops,
      rxDrops,
    };
  }
  if (raw.has('sent_pkts') || raw.has('rcvd_pkts')) {
    return {
      device,
      port,
      scheme: 'rxe',
      ...num('txPackets', raw.get('sent_pkts')),
      ...num('rxPackets', raw.get('rcvd_pkts')),
    };
  }
  return { device, port, scheme: 'unknown' };
}

function num(key: string, v: number | undefined): Record<string, number> {
  return v === undefined ? {} : { [key]: v };
}

/** Each port's counters of one device (port directories first, the device-wide set as port 0 when there are none). */
export function readDeviceCounters(hostRoot: string, device: string): PortCounters[] {
  const base = sysClass(hostRoot, 'infiniband', device);
  const ports = existsSync(join(base, 'ports'))
    ? readdirSync(join(base, 'ports')).filter((p) => /^\d+$/.test(p))
    : [];
  const out = ports
    .map((p) => ({ port: Number(p), raw: readCounters(join(base, 'ports', p, 'hw_counters')) }))
    .filter((x) => x.raw.size > 0)
    .map((x) => normalize(device, x.port, x.raw));
  if (out.length > 0) return out.sort((a, b) => a.port - b.port);
  const dev = readCounters(join(base, 'hw_counters'));
  return dev.size > 0 ? [normalize(device, 0, dev)] : [];
}

// ---- `devices --watch`: per-second rates like `eadm stat -l` ----

type Field = 'txBytes' | 'rxBytes' | 'txPackets' | 'rxPackets';
const FIELDS: readonly Field[] = ['rxBytes', 'txBytes', 'rxPackets', 'txPackets'];

interface Track {
  readonly first: PortCounters;
  last: PortCounters;
  lastAt: number;
  readonly firstAt: number;
  readonly max: Partial<Record<Field, number>>;
  readonly min: Partial<Record<Field, number>>;
  samples: number;
}

export interface RateRow {
  readonly device: string;
  readonly port: number;
  readonly elapsedS: number;
  /** Per field: the last interval's rate, and max / avg / min over the watch. */
  readonly rates: Partial<
    Record<
      Field,
      { readonly now: number; readonly max: number; readonly avg: number; readonly min: number }
    >
  >;
  readonly totals: Partial<Record<Field, number>>;
  readonly drops: { readonly tx?: number; readonly rx?: number };
}

/** Keeps the first and last sample of each port and turns new samples into rate rows. */
export class RateWatch {
  private readonly tracks = new Map<string, Track>();

  sample(counters: readonly PortCounters[], atMs: number): RateRow[] {
    return counters.map((c) => {
      const key = `${c.device}/${c.port}`;
      const t = this.tracks.get(key);
      if (!t) {
        this.tracks.set(key, {
          first: c,
          last: c,
          lastAt: atMs,
          firstAt: atMs,
          max: {},
          min: {},
          samples: 0,
        });
        return {
          device: c.device,
          port: c.port,
          elapsedS: 0,
          rates: {},
          totals: totals(c),
          drops: drops(c),
        };
      }
      const dt = Math.max(1e-3, (atMs - t.lastAt) / 1000);
      const rates: Record<string, { now: number; max: number; avg: number; min: number }> = {};
      t.samples++;
      for (const f of FIELDS) {
        const cur = c[f];
        const prev = t.last[f];
        const start = t.first[f];
        if (cur === undefined || prev === undefined || start === undefined) continue;
        const now = Math.max(0, cur - prev) / dt; // a counter reset reads as 0, not negative
        t.max[f] = Math.max(t.max[f] ?? now, now);
        t.min[f] = Math.min(t.min[f] ?? now, now);
        rates[f] = {
          now,
          max: t.max[f],
          avg: Math.max(0, cur - start) / Math.max(1e-3, (atMs - t.firstAt) / 1000),
          min: t.min[f],
        };
      }
      t.last = c;
      t.lastAt = atMs;
      return {
        device: c.device,
        port: c.port,
        elapsedS: (atMs - t.firstAt) / 1000,
        rates,
        totals: totals(c),
        drops: drops(c),
      };
    });
  }
}

function totals(c: PortCounters): Partial<Record<Field, number>> {
  return Object.fromEntries(
    FIELDS.filter((f) => c[f] !== undefined).map((f) => [f, c[f] as number]),
  );
}

function drops(c: PortCounters): { tx?: number; rx?: number } {
  return {
    ...(c.txDrops !== undefined ? { tx: c.txDrops } : {}),
    ...(c.rxDrops !== undefined ? { rx: c.rxDrops } : {}),
  };
}

function human(n: number, unit: string): string {
  const k = ['', 'K', 'M', 'G', 'T'];
  let v = n;
  let i = 0;
  while (v >= 1000 && i < k.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v.toFixed(v < 10 && i > 0 ? 2 : i > 0 ? 1 : 0)}${k[i]}${unit}`;
}

/** A block per port: rx | tx, bytes/s and packets/s now, max/avg/min, totals, drops, elapsed. */
export function formatRates(rows: readonly RateRow[]): string {
  const out: string[] = [];
  for (const r of rows) {
    out.push(`${r.device} port ${r.port}  elapsed ${r.elapsedS.toFixed(0)}s`);
    out.push(`  ${''.padEnd(10)}${'rx'.padEnd(34)}tx`);
    for (const [label, rx, tx, unit] of [
      ['bytes/s', 'rxBytes', 'txBytes', 'B/s'],
      ['pkts/s', 'rxPackets', 'txPackets', 'p/s'],
    ] as const) {
      const cell = (f: Field): string => {
        const x = r.rates[f];
        if (!x) return r.totals[f] === undefined ? 'n/a' : '-';
        return `${human(x.now, unit)} (${human(x.max, '')}/${human(x.avg, '')}/${human(x.min, '')})`;
      };
      out.push(`  ${label.padEnd(10)}${cell(rx).padEnd(34)}${cell(tx)}`);
    }
    const tot = (f: Field): string =>
      r.totals[f] === undefined
        ? 'n/a'
        : human(r.totals[f] as number, f.endsWith('Bytes') ? 'B' : 'p');
    out.push(
      `  ${'total'.padEnd(10)}${`${tot('rxBytes')} ${tot('rxPackets')}`.padEnd(34)}${tot('txBytes')} ${tot('txPackets')}`,
    );
    if (r.drops.rx !== undefined || r.drops.tx !== undefined)
      out.push(
        `  ${'drops'.padEnd(10)}${String(r.drops.rx ?? 'n/a').padEnd(34)}${r.drops.tx ?? 'n/a'}`,
      );
  }
  out.push('  (now (max/avg/min))');
  return `${out.join('\n')}\n`;
}
