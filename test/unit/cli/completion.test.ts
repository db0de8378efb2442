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

  // #80 item 11: these offered flags, or files, before.
  it('offers files for a path, the choices of an option that takes them, and rule ids', async () => {
    writeFileSync(join(dir, 'pod.yaml'), 'kind: Pod\n');
    const files = async (...words: string[]) =>
      (await complete(...words)).filter((w) => w.includes('pod.yaml'));
    const at = `${dir}/po`;
    expect(await files('check', at)).toEqual([`${dir}/pod.yaml`]);
    expect(await complete('check', '')).not.toContain('--filename'); // check <TAB>: files, not flags
    expect(await files('check', '-f', at)).toEqual([`${dir}/pod.yaml`]);
    expect(await files('check', '-o', 'json', at)).toEqual([`${dir}/pod.yaml`]);
    expect(await complete('check', '-o', '')).toEqual([
      'text',
      'json',
      'yaml',
      'junit',
      'sarif',
      'policyreport',
      'github',
    ]);
    expect(await complete('check', '--output', 'ju')).toEqual(['junit']);
    expect(await complete('--log-level', 'w')).toEqual(['warn']);
    expect(await complete('status', '--log-level', 'de')).toEqual(['debug']);
    expect(await complete('--log-level', 'debug', 'ch')).toEqual(['check']);
    expect(await complete('explain', 'ho')).toEqual(['host-network']);
    expect(await complete('rules', 'ip')).toEqual(['ip-family']);
    expect(await complete('serve', '--cert-source', '')).toEqual(['files', 'secret']);
    expect(await complete('serve', '--port', '')).toEqual([]); // a number: nothing to offer
    expect(await complete('certs', '')).toEqual(['generate']);
    expect(await complete('certs', 'generate', '--o')).toEqual(['--out']);
    expect(await complete('completion', '')).toEqual(['bash']);
  });

  it('refuses a shell it has no script for', async () => {
    const r = await runCli(['completion', 'fish']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/completion for "fish" is not made; bash is/);
  });
});
