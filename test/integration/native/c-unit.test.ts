// The native binary as built: static, its C unit tests under ASan/UBSan (native/test/unit.c), and
// a clear error where the kernel has no SMC.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const PLUGIN = 'native/build/erdma-smcr';

describe('native build and unit tests', () => {
  it('is a static binary', () => {
    expect(execFileSync('file', [PLUGIN], { encoding: 'utf8' })).toMatch(/statically linked/);
  });

  it("passes the C unit tests (netlink encoding and decoding, allow-list; the preload library's threads and fork checks) under ASan/UBSan, and the preload library's again under ThreadSanitizer", () => {
    const r = spawnSync('make', ['-s', '-C', 'native', 'check'], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // unit, preload-threads (ASan/UBSan); preload-threads (TSan).
    expect(r.stdout.match(/\d+ checks, 0 failed/g), r.stdout).toHaveLength(4);
    expect(r.stdout + r.stderr).not.toMatch(/ThreadSanitizer|AddressSanitizer|runtime error/);
  });

  // musl's loader binds every symbol at load: one glibc-only symbol (pthread_atfork's
  // __register_atfork) and every Alpine program refuses the library. Here, without SMC, the
  // program must load it and run (its sockets TCP); the VM suites run it where AF_SMC opens.
  it('the preload library loads in a musl program (an Alpine image), which then runs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'musl-'));
    try {
      const bin = join(dir, 'sock-loop-musl');
      execFileSync('musl-gcc', ['-O2', '-o', bin, 'test/smcr-vm/sock-loop.c']);
      const r = spawnSync(bin, ['1'], {
        encoding: 'utf8',
        env: { ...process.env, LD_PRELOAD: resolve('native/build/libsmc-preload.so') },
      });
      expect(r.stderr).not.toMatch(/Error relocating/);
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ sockets: 16, failed: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pnet list reads the pnet table where the kernel has SMC, and says clearly when it has none', () => {
    const r = spawnSync(PLUGIN, ['pnet', 'list'], { encoding: 'utf8' });
    if (existsSync('/proc/sys/net/smc')) {
      // A kernel with SMC (the SMC-R VM suites read real entries): the table, maybe empty, no error.
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      return;
    }
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/SMC netlink family is missing/);
  });
});
