// The troubleshooting tables (docs/troubleshooting.md) name every denial rule, every Event reason the agent posts
// and every node reason it writes, so no message a user sees goes unexplained.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RULES } from '../../src/policy/rules/index.js';
import { DIFFERENCES, GO_DIFFERENCES } from '../vm/cpython-differences.js';

// The tables live in docs/troubleshooting.md; the README links there.
const troubleshooting = readFileSync('docs/troubleshooting.md', 'utf8');
const rowKeys = new Set(
  [...troubleshooting.matchAll(/^\| `([^`]+)`(?:, `([^`]+)`)? \|/gm)].flatMap((m) =>
    [m[1], m[2]].filter(Boolean),
  ),
);

describe('docs/troubleshooting.md', () => {
  it('explains every denial rule', () => {
    const ids = RULES.map((r) => r.id);
    expect(ids.length).toBeGreaterThanOrEqual(8);
    for (const id of ids) expect(rowKeys, id).toContain(id);
  });

  it('explains every Event reason the agent posts', () => {
    const reasons = [
      ...readFileSync('src/agent/observe/pod-outcome.ts', 'utf8').matchAll(
        /reason: '([A-Za-z]+)'/g,
      ),
    ].map((m) => m[1]);
    expect(reasons.length).toBeGreaterThan(3);
    for (const r of reasons) expect(rowKeys, r).toContain(r);
  });

  it('explains every node reason label the agent writes', () => {
    const src = readFileSync('src/agent/node/capability.ts', 'utf8');
    const reasons = [
      ...src.matchAll(/no\(\s*'([a-z-]+)'/g),
      ...src.matchAll(/reason: '([a-z-]+)'/g),
    ].flatMap((m) => m.slice(1));
    expect(reasons.length).toBeGreaterThan(4);
    for (const r of reasons) expect(rowKeys, r).toContain(r);
    for (const mode of ['compat', 'ofed']) expect(rowKeys).toContain(`driver-mode-${mode}`);
  });
});

describe('the README', () => {
  it('is read in one sitting: at most 16 KiB (details live in docs/)', () => {
    expect(readFileSync('README.md').length).toBeLessThanOrEqual(16 * 1024);
  });
});

describe('links in the README and docs/', () => {
  const slug = (h: string): string =>
    h
      .trim()
      .toLowerCase()
      .replace(/[^a-z0-9 _-]/g, '')
      .replace(/ /g, '-');
  const pages = [
    'README.md',
    ...readdirSync('docs')
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];

  it.each(pages)('%s links only to files and headings that exist', (page) => {
    const text = readFileSync(page, 'utf8');
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1]!)
      .filter((l) => !/^[a-z]+:/.test(l));
    for (const link of links) {
      const [file = '', anchor] = link.split('#');
      const target = file === '' ? page : join(dirname(page), file);
      expect(existsSync(target), `${page}: ${link}`).toBe(true);
      if (anchor) {
        const headings = [...readFileSync(target, 'utf8').matchAll(/^#+ (.*)$/gm)].map((m) =>
          slug(m[1]!),
        );
        expect(headings, `${page}: ${link}`).toContain(anchor);
      }
    }
  });
});

// #79: what CPython's own suite found SMC to change (test/vm/cpython-differences.ts) is listed in
// docs/support-matrix.md, one row per difference, with its tests.
describe('docs/support-matrix.md, what SMC changes for a program', () => {
  const matrix = readFileSync('docs/support-matrix.md', 'utf8');
  const section = matrix.slice(matrix.indexOf('## What SMC changes for a program'));
  it.each([...DIFFERENCES, ...GO_DIFFERENCES].map((d) => [d.doc, d]))(
    'lists "%s" with its runs',
    (doc, d) => {
      const row = section.split('\n').find((l) => l.startsWith(`| ${doc} |`));
      expect(row, doc).toBeDefined();
      for (const run of d.runs) expect(row, `${doc}: ${run}`).toContain(run);
    },
  );
});
