// The one table of costs (#100): made from docs/benchmarks.md by scripts/cost-table.mjs, quoted in
// each document of QUOTED_IN word for word. A hand edit of a copy, or a bench run that changed
// benchmarks.md without the script, fails here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { costTable as make, QUOTED_IN, withTable as put } from '../../scripts/cost-table.mjs';

describe('the cost table', () => {
  const benchmarks = readFileSync('docs/benchmarks.md', 'utf8');
  const table = make(benchmarks);

  it.each([...QUOTED_IN])('%s holds it as the bench output makes it', (file) => {
    const doc = readFileSync(file, 'utf8');
    expect(doc).toContain(table);
    expect(put(doc, table)).toBe(doc);
  });

  it('is made from the numbers: a changed bench row changes it', () => {
    expect(table).toMatch(/\| a connect to an SMC-R pod \| [\d.]+× \|/);
    const changed = benchmarks.replace(
      /(\| smc-cost \| bookworm, preload: SMC-R client → SMC-R pod, connect, p50[^|]*\|[^|]*\|[^|]*\| )[\d.]+×/,
      '$199.99×',
    );
    expect(changed).not.toBe(benchmarks);
    expect(make(changed)).toMatch(/\| a connect to an SMC-R pod \| 99\.99× \|/);
  });
});
