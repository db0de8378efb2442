// `erdma-smcr check` as the installed binary (bin/erdma-smcr.js over the compiled dist/), as CI
// pipelines run it: the exit codes are the contract. The in-process suite is test/unit/cli/check.test.ts.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('erdma-smcr check, the binary', () => {
  it('runs as the installed binary and exits with the documented codes', async () => {
    const run = promisify(execFile);
    const ok = await run(process.execPath, ['bin/erdma-smcr.js', 'check', 'examples/valid']);
    expect(ok.stdout).toMatch(/0 denied/);
    await expect(
      run(process.execPath, ['bin/erdma-smcr.js', 'check', 'examples/invalid']),
    ).rejects.toMatchObject({ code: 1 });
    await expect(
      run(process.execPath, ['bin/erdma-smcr.js', 'check', '/nonexistent']),
    ).rejects.toMatchObject({ code: 2 });
  });
});

describe('a reader that stops early (`| head`)', () => {
  // A real pipe whose read end is closed after the first chunk: the binary gets EPIPE on a later
  // write, since its report (two thousand objects) is far larger than the pipe's buffer. It must stop
  // writing quietly and still exit with its verdict.
  async function readOneChunk(file: string): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, ['bin/erdma-smcr.js', 'check', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
    return { code, stderr };
  }

  function manyPods(value: string): string {
    const pod = (i: number) =>
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p${i}\n  namespace: demo\n` +
      `  annotations: {network.alibabacloud.com/erdma-smcr: "${value}"}\n` +
      `spec:\n  containers: [{name: c, image: busybox}]\n`;
    return Array.from({ length: 2000 }, (_, i) => pod(i)).join('---\n');
  }

  it('exits with the verdict and no error when stdout closes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'erdma-smcr-epipe-'));
    try {
      writeFileSync(join(dir, 'denied.yaml'), manyPods('maybe'));
      writeFileSync(join(dir, 'passed.yaml'), manyPods('true'));
      const denied = await readOneChunk(join(dir, 'denied.yaml'));
      expect(denied.stderr).not.toMatch(/EPIPE|internal error/);
      expect(denied.code).toBe(1);
      const passed = await readOneChunk(join(dir, 'passed.yaml'));
      expect(passed.stderr).not.toMatch(/EPIPE|internal error/);
      expect(passed.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
