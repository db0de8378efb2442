// The CNI configuration parser under libFuzzer (native/fuzz/fuzz_conf.c), from its corpus.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('fuzzing the configuration parser (libFuzzer)', () => {
  it('runs 200,000 inputs without a crash, leak or sanitizer report', () => {
    const clang = spawnSync('clang', ['--version'], { stdio: 'ignore' });
    expect(clang.status, 'clang and libclang-rt-14-dev are needed (installed by .ci/run)').toBe(0);
    const build = spawnSync('make', ['-s', '-C', 'native', 'fuzz'], { encoding: 'utf8' });
    expect(build.status, build.stderr).toBe(0);
    const corpus = mkdtempSync(join(tmpdir(), 'fuzz-corpus-'));
    try {
      execFileSync('cp', ['-r', 'native/fuzz/corpus/.', corpus]);
      const r = spawnSync(
        'native/build/fuzz-conf',
        ['-runs=200000', '-max_len=4096', '-timeout=10', corpus],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(r.status, r.stderr.slice(-2000)).toBe(0);
      expect(r.stderr).toMatch(/Done 200000 runs/);
    } finally {
      rmSync(corpus, { recursive: true, force: true });
    }
  });
});
