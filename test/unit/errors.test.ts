import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { AppError, ERRORS, exitFor } from '../../src/errors.js';

describe('error catalogue', () => {
  it('is documented row for row in docs/errors.md', () => {
    const rows = readFileSync('docs/errors.md', 'utf8')
      .split('\n')
      .map((l) => /^\| `([A-Z_]+)` \| (\d+) \| (\d+) \| (\d+) \| (.+) \|$/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null);
    expect(
      Object.fromEntries(
        rows.map((m) => [m[1], { status: Number(m[2]), exit: Number(m[3]), doc: m[5] }]),
      ),
    ).toEqual(ERRORS);
    // #80 item 10: the exit of check and review per code, as the CLI computes it.
    for (const m of rows)
      expect(Number(m[4]), m[1]).toBe(exitFor(m[1] as keyof typeof ERRORS, 'check'));
  });

  // #80 item 10: every code the source emits is in the catalogue (a literal code anywhere in src/).
  it('holds every code the source emits', () => {
    const files = execFileSync('git', ['ls-files', 'src'], { encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.endsWith('.ts'));
    const used = new Set<string>();
    for (const f of files)
      for (const m of readFileSync(f, 'utf8').matchAll(
        /new AppError\(\s*'([A-Z][A-Z_]+)'|code: '((?:INPUT|NOTHING|REVIEW)_[A-Z_]+)'/g,
      ))
        used.add((m[1] ?? m[2])!);
    expect(used.size).toBeGreaterThan(10);
    for (const code of used) expect(Object.keys(ERRORS), code).toContain(code);
  });

  it('never ends check or review with 1 (denied) for a failure', () => {
    for (const code of Object.keys(ERRORS) as (keyof typeof ERRORS)[]) {
      expect(exitFor(code, 'check'), code).not.toBe(1);
      expect(exitFor(code, 'review'), code).not.toBe(1);
    }
    expect(exitFor('INTERNAL', 'serve')).toBe(1);
  });

  it('gives each error its status and exit code', () => {
    const e = new AppError('BODY_TOO_LARGE', 'too big');
    expect([e.status, e.exitCode, e.code, e.message]).toEqual([
      413,
      2,
      'BODY_TOO_LARGE',
      'too big',
    ]);
  });
});
