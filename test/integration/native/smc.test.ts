// The native binary's tools as the agent calls them (src/native/binary.ts), for real: exit codes,
// per-netns lines, errors. This machine's kernel has no smc_diag: the answers say so.
import { describe, expect, it } from 'vitest';
import { NativeBinary } from '../../../src/native/binary.js';
import type { SmcSummary } from '../../../src/native/contract.js';

describe('the native binary, called as the agent calls it', () => {
  it('reads many netns with one call of the real binary, each failure on its own line', async () => {
    // This kernel has no smc_diag: every line is an error, and the reads still come back per netns.
    const r = await new NativeBinary('native/build/erdma-smcr').smcSummaries([
      '/nonexistent/netns',
      '/proc/self/ns/net',
    ]);
    expect(r.get('/nonexistent/netns')).toEqual({
      error: expect.stringMatching(/cannot enter the netns: No such file/),
    });
    const self = r.get('/proc/self/ns/net') as SmcSummary | { error: string };
    // On a kernel with smc_diag the host's own sockets are summarised; here it says what is missing.
    if ('error' in self) expect(self.error).toMatch(/no SMC socket diagnostics/);
    else expect(self).toHaveProperty('byMode');
  });

  it('takes each netns\'s SMC selection, and refuses one that does not parse before reading any', async () => {
    const binary = new NativeBinary('native/build/erdma-smcr');
    const r = await binary.smcSummaries(
      ['/nonexistent/netns'],
      30_000,
      new Map([['/nonexistent/netns', 'nets=10.0.0.0/8;connect=6379;listen=*']]),
    );
    expect(r.get('/nonexistent/netns')).toEqual({
      error: expect.stringMatching(/cannot enter the netns/),
    });
    const bad = await binary.smcSummaries(
      ['/proc/self/ns/net'],
      30_000,
      new Map([['/proc/self/ns/net', 'nets=bad']]),
    );
    expect(bad.get('/proc/self/ns/net')).toEqual({
      error: expect.stringMatching(/--select: nets: "bad" is not an IPv4 CIDR/),
    });
  });
});
