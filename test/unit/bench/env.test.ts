// The environment the benches start servers and daemons in (bench/env.ts): a pod's, not the shell's.
// This machine sets NODE_EXTRA_CA_CERTS, which Node parses at start, and a bench that passed it on
// measured 1.2-2.1 MB more on Node 20 than the pods run (#43).
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { podEnv } from '../../../bench/env.js';

const SHELL_ONLY = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'NODE_OPTIONS', 'HOME'];
const saved = Object.fromEntries(SHELL_ONLY.map((k) => [k, process.env[k]]));

afterEach(() => {
  for (const [k, v] of Object.entries(saved))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
});

describe('podEnv', () => {
  it("gives a child PATH and the caller's variables, nothing else of the shell it runs in", () => {
    process.env.NODE_EXTRA_CA_CERTS = '/etc/ssl/certs/ca-certificates.crt';
    process.env.SSL_CERT_FILE = '/etc/ssl/certs/ca-certificates.crt';
    process.env.NODE_OPTIONS = '--max-old-space-size=4096';
    process.env.HOME = '/root';
    const seen = JSON.parse(
      execFileSync(process.execPath, ['-p', 'JSON.stringify(process.env)'], {
        env: podEnv({ NODE_OPTIONS: '--max-semi-space-size=4', ERDMA_SMCR_LOG_LEVEL: 'warn' }),
        encoding: 'utf8',
      }),
    ) as Record<string, string>;
    expect(Object.keys(seen).sort()).toEqual(['ERDMA_SMCR_LOG_LEVEL', 'NODE_OPTIONS', 'PATH']);
    expect(seen.PATH).toBe(process.env.PATH);
    expect(seen.NODE_OPTIONS).toBe('--max-semi-space-size=4');
  });
});
