// The C code of native/ is in the style of native/.clang-format, as Debian's clang-format reads
// it: the check `npm test` runs for C, as Prettier's is for TypeScript. `npm run format:c` fixes.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { onPath, requires } from '../../helpers/requires.js';

const skip = requires('the C style check', onPath('clang-format', 'clang-format'));

/** The C files of native/ that git tracks. */
function cFiles(): string[] {
  const r = spawnSync('git', ['ls-files', '--', 'native/*.c', 'native/*.h'], { encoding: 'utf8' });
  return r.stdout.split('\n').filter((f) => f !== '');
}

describe.skipIf(skip)('the C style', () => {
  it('every C file of native/ is as clang-format writes it', () => {
    const files = cFiles();
    expect(files.length).toBeGreaterThan(20);
    const r = spawnSync('clang-format', ['--dry-run', '--Werror', ...files], { encoding: 'utf8' });
    // Its message names the file, the line and what differs.
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('finds a file that is not (the check can fail)', () => {
    // Beside native/.clang-format, so that it is the style read.
    const bad = join('native', 'src', `style-probe-${process.pid}.c`);
    writeFileSync(bad, 'int  f(void){return 0;}\n');
    try {
      const r = spawnSync('clang-format', ['--dry-run', '--Werror', bad], { encoding: 'utf8' });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain(bad);
    } finally {
      rmSync(bad, { force: true });
    }
  });
});
