import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AppError, ERRORS } from '../../src/errors.js';

describe('error catalogue', () => {
  it('is documented row for row in docs/errors.md', () => {
    const rows = readFileSync('docs/errors.md', 'utf8')
      .split('\n')
      .map((l) => /^\| `([A-Z_]+)` \| (\d+) \| (\d+) \| (.+) \|$/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1], { status: Number(m[2]), exit: Number(m[3]), doc: m[4] }]);
    expect(Object.fromEntries(rows)).toEqual(ERRORS);
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
