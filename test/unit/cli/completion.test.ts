// `erdma-smcr completion bash`, sourced into a real bash and asked as bash asks (COMP_WORDS,
// COMP_CWORD): commands, a command's options and subcommands, files for paths.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'completion-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function complete(...words: string[]): Promise<string[]> {
  const script = join(dir, 'erdma-smcr.bash');
  writeFileSync(script, (await runCli(['completion', 'bash'])).stdout);
  const line = words.map((w) => `'${w}'`).join(' ');
  const out = execFileSync(
    'bash',
    [
      '-c',
      `source '${script}'; COMP_WORDS=(erdma-smcr ${line}); COMP_CWORD=${words.length}; _erdma_smcr; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8', cwd: process.cwd() },
  );
  return out.split('\n').filter(Boolean);
}

describe('bash completion', () => {
  it('completes commands, options, subcommands and paths', async () => {
    expect(await complete('ch')).toEqual(['check']);
    expect(await complete('check', '--fail')).toEqual(['--fail-on-warn']);
    expect(await complete('check', '--exc')).toEqual(['--exclude']);
    expect(await complete('certs', 'ge')).toEqual(['generate']);
    expect(await complete('serve', '--metrics-p')).toEqual(['--metrics-port']);
    expect(await complete('check', 'exam')).toEqual(['examples']);
    expect(await complete('status', '--log-l')).toEqual(['--log-level']);
  });

  it('refuses a shell it has no script for', async () => {
    const r = await runCli(['completion', 'fish']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/completion for "fish" is not made; bash is/);
  });
});
