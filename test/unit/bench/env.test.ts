// The environment the benches start servers and daemons in (bench/env.ts): a pod's, not the shell's.
// This machine sets NODE_EXTRA_CA_CERTS, which Node parses at start, and a bench that passed it on
// measured 1.2-2.1 MB more on Node 20 than the pods run (#43).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { IMAGE_APP, imageLayout, moduleListPreload, podEnv } from '../../../bench/env.js';
import { until } from '../../helpers/wait.js';

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

// The memory bench runs `serve` from a path as long as the image's /app: on Node 26 the length of
// the paths Node resolves at start-up decides whether V8's optimising compiler runs then (6.5 MiB).
describe('imageLayout', () => {
  it("knows where the image's entry point is", () => {
    expect(readFileSync('Dockerfile', 'utf8')).toContain(`"${IMAGE_APP}/bin/erdma-smcr.js"`);
  });

  it('without root runs from the checkout, and says so', () => {
    const dir = mkdtempSync(join(tmpdir(), 'layout-'));
    try {
      const l = imageLayout(dir, 1000);
      expect(l).toMatchObject({ file: '', prefix: [], entry: 'bin/erdma-smcr.js', certDir: dir });
      expect(l.note).toMatch(/not root/);
      expect(readdirSync(dir)).toEqual([]); // nothing copied
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The benches and tests learn what a daemon has loaded from a preload that lists it every so often.
// Written in place, a reader between the truncate and the write parsed an empty file (CI, at
// cc2f07f); a third of the reads against a writer every millisecond failed so.
describe('moduleListPreload', () => {
  it('lists what the process loaded, and a reader never finds the list half written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'module-list-'));
    const list = join(dir, 'modules.json');
    writeFileSync(join(dir, 'list.cjs'), moduleListPreload(list, { everyMs: 1, files: true }));
    const child = spawn(
      process.execPath,
      ['-e', "require('node:zlib'); setInterval(() => {}, 1000)"],
      { env: podEnv({ NODE_OPTIONS: `--require ${join(dir, 'list.cjs')}` }), stdio: 'ignore' },
    );
    try {
      await until('a first list', () => (existsSync(list) ? true : undefined));
      let reads = 0;
      const failed: string[] = [];
      for (const end = Date.now() + 1500; Date.now() < end; reads++) {
        const text = readFileSync(list, 'utf8');
        try {
          JSON.parse(text);
        } catch {
          failed.push(text.slice(0, 40));
        }
      }
      expect(failed, `${failed.length} of ${reads} reads`).toEqual([]);
      const loaded = JSON.parse(readFileSync(list, 'utf8')) as string[];
      expect(loaded).toContain('NativeModule zlib');
      expect(loaded).toContain(join(dir, 'list.cjs'));
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
