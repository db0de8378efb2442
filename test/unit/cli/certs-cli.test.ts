// `erdma-smcr certs generate`: files, permissions, names, and a second run that keeps what is there.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { certInfo } from '../../../src/certs/x509.js';
import { runCli } from '../../helpers/cli.js';

describe('erdma-smcr certs generate', () => {
  const dirs: string[] = [];
  const tmp = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'certs-cli-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('writes a CA and a serving certificate for the Service names, keys readable by the owner only', async () => {
    const out = join(tmp(), 'certs');
    const r = await runCli([
      'certs',
      'generate',
      '--service',
      'hook',
      '--namespace',
      'infra',
      '--out',
      out,
      '--name',
      'hook.example.com',
      '--days',
      '30',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('base64 -w0');
    for (const key of ['ca.key', 'tls.key'])
      expect(statSync(join(out, key)).mode & 0o777).toBe(0o600);
    const info = certInfo(readFileSync(join(out, 'tls.crt'), 'utf8'));
    expect(info.dnsNames).toEqual([
      'hook',
      'hook.infra',
      'hook.infra.svc',
      'hook.infra.svc.cluster.local',
      'hook.example.com',
    ]);
    expect(info.ipAddresses).toEqual([]);
    const days = (info.notAfter.getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);
    expect(certInfo(readFileSync(join(out, 'ca.crt'), 'utf8')).isCA).toBe(true);

    const before = readFileSync(join(out, 'tls.crt'), 'utf8');
    const again = await runCli([
      'certs',
      'generate',
      '--service',
      'hook',
      '--namespace',
      'infra',
      '--out',
      out,
    ]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/nothing written/);
    expect(readFileSync(join(out, 'tls.crt'), 'utf8')).toBe(before);
  });

  it('refuses a bad validity and a missing flag with exit 2', async () => {
    const out = tmp();
    const bad = await runCli([
      'certs',
      'generate',
      '--service',
      's',
      '--namespace',
      'n',
      '--out',
      out,
      '--days',
      'soon',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--days must be a positive integer, got soon/);
    const missing = await runCli(['certs', 'generate', '--service', 's', '--out', out]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--namespace/);
  });
});
