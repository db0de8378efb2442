// The chart's comments send admins to sections of docs/ by name (docs/install.md "Upgrade"): each
// named section exists, so a rename is caught here (#102: values.yaml and _helpers.tpl cited a
// "Moving from ACK's controller" that install.md never had).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const CHART = 'charts/erdma-smcr';

function chartFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? chartFiles(join(dir, e.name)) : [join(dir, e.name)],
  );
}

const citations = chartFiles(CHART).flatMap((file) =>
  [...readFileSync(file, 'utf8').matchAll(/docs\/([a-z-]+\.md)\s*(?:#\s*)?"([^"]+)"/g)].map(
    (m) => ({ file, doc: `docs/${m[1]!}`, section: m[2]! }),
  ),
);

describe("the chart's citations of docs/", () => {
  it('finds some (the check can fail)', () => {
    expect(citations.length).toBeGreaterThan(0);
  });

  it.each(citations.map((c) => [`${c.file} → ${c.doc} "${c.section}"`, c] as const))(
    '%s is a heading there',
    (_name, c) => {
      const headings = readFileSync(c.doc, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('#'))
        .map((l) => l.replace(/^#+\s*/, ''));
      expect(headings, `${c.file} cites ${c.doc} "${c.section}"`).toContain(c.section);
    },
  );
});
