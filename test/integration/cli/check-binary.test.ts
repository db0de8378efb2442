// `erdma-smcr check` as the installed binary (bin/erdma-smcr.js over the compiled dist/), as CI
// pipelines run it: the exit codes are the contract. The in-process suite is test/unit/cli/check.test.ts.
import { execFile } from 'node:child_process';
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
