// Shared row shape and a Markdown table printer for `npm run bench`.

export interface BenchRow {
  readonly bench: string;
  readonly case: string;
  readonly value: number;
  readonly unit: string;
  readonly ms?: number;
  /** Ratio to the baseline measured in the same run (>1 = faster than baseline, for throughput). */
  readonly ratio?: number;
  readonly target?: string;
  readonly extra?: string;
}

/** A row for a case this machine cannot measure, with why (printed in the target column). */
export function skippedRow(bench: string, name: string, why: string): BenchRow {
  return { bench, case: name, value: 0, unit: 'skipped', target: why };
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  if (s.length === 0) return 0;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2);
}

export function table(rows: readonly BenchRow[]): string {
  const head =
    '| bench | case | result | time | vs baseline | target / notes |\n|---|---|---|---|---|---|';
  const body = rows.map(
    (r) =>
      `| ${r.bench} | ${r.case} | ${fmt(r.value)} ${r.unit} | ${r.ms !== undefined ? `${fmt(r.ms)} ms` : ''} | ${r.ratio !== undefined ? `${r.ratio.toFixed(2)}×` : ''} | ${[r.target, r.extra].filter(Boolean).join('; ')} |`,
  );
  return [head, ...body].join('\n');
}
