// The native binary as built: static, its C unit tests under ASan/UBSan (native/test/unit.c), and
// a clear error where the kernel has no SMC.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
    expect(r.stdout.match(/\d+ checks, 0 failed/g), r.stdout).toHaveLength(3);
    expect(r.stdout + r.stderr).not.toMatch(/ThreadSanitizer|AddressSanitizer|runtime error/);
  });

  it('pnet list reports a missing SMC family clearly on a kernel without SMC', () => {
    const r = spawnSync(PLUGIN, ['pnet', 'list'], { encoding: 'utf8' });
    if (existsSync('/proc/sys/net/smc')) return; // a kernel with SMC: covered by the SMC-R kernel suite
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/SMC netlink family is missing/);
  });
});
