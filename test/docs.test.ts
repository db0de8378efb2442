// The README's troubleshooting tables name every denial rule, every Event reason the agent posts
// and every node reason it writes, so no message a user sees goes unexplained.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const readme = readFileSync('README.md', 'utf8');
const troubleshooting = readme.slice(readme.indexOf('## Troubleshooting'), readme.indexOf('## Annotations and labels'));
const rowKeys = new Set([...troubleshooting.matchAll(/^\| `([^`]+)`(?:, `([^`]+)`)? \|/gm)].flatMap((m) => [m[1], m[2]].filter(Boolean)));

describe('README troubleshooting', () => {
  it('explains every denial rule', () => {
    const src = readFileSync('src/policy/rules.ts', 'utf8') + readFileSync('src/policy/evaluate.ts', 'utf8');
    const ids = [...new Set([...src.matchAll(/(?:deny\(|rule: )\s*'([a-z-]+)'/g)].map((m) => m[1]))];
    expect(ids.length).toBeGreaterThanOrEqual(8);
    for (const id of ids) expect(rowKeys, id).toContain(id);
  });

  it('explains every Event reason the agent posts', () => {
    const reasons = [...readFileSync('src/agent/pods.ts', 'utf8').matchAll(/reason: '([A-Za-z]+)'/g)].map((m) => m[1]);
    expect(reasons.length).toBeGreaterThan(3);
    for (const r of reasons) expect(rowKeys, r).toContain(r);
  });

  it('explains every node reason label the agent writes', () => {
    const src = readFileSync('src/agent/capability.ts', 'utf8');
    const reasons = [...src.matchAll(/no\(\s*'([a-z-]+)'/g), ...src.matchAll(/\? '([a-z-]+)' : '([a-z-]+)'/g)].flatMap((m) => m.slice(1));
    expect(reasons.length).toBeGreaterThan(4);
    for (const r of reasons) expect(rowKeys, r).toContain(r);
    for (const mode of ['compat', 'ofed']) expect(rowKeys).toContain(`driver-mode-${mode}`);
  });
});
