// `erdma-smcr certs generate`: files, permissions, names, and a second run that keeps what is there.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { certInfo } from '../../../src/certs/x509.js';
import { runCli } from '../../helpers/cli.js';

/** `certs generate` for the Service s.n into `out`, with any further flags. */
const generate = (out: string, ...more: string[]): ReturnType<typeof runCli> =>
  runCli(['certs', 'generate', '--service', 's', '--namespace', 'n', '--out', out, ...more]);

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

  // Files a user put there: never overwritten, each refusal names them (#70).
  it.each([
    [['tls.crt'], /certs holds .*certs\/tls\.crt without tls\.key/],
    [['tls.key'], /tls\.key without tls\.crt/],
    [['ca.crt'], /ca\.crt without ca\.key/],
    [['ca.key', 'tls.crt', 'tls.key'], /ca\.key without ca\.crt/],
    [['tls.crt', 'tls.key'], /a serving certificate and key without ca\.crt and ca\.key/],
  ])('refuses a directory holding only %j, and leaves it as it was', async (files, why) => {
    const out = join(tmp(), 'certs');
    mkdirSync(out);
    for (const f of files) writeFileSync(join(out, f), `user's ${f}\n`);
    const args = ['--service', 's', '--namespace', 'n', '--out', out];
    const r = await runCli(['certs', 'generate', ...args]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(why);
    expect(r.stderr).toMatch(/not generating certificates over files this command did not make/);
    expect(readdirSync(out).sort()).toEqual([...files].sort());
    for (const f of files) expect(readFileSync(join(out, f), 'utf8')).toBe(`user's ${f}\n`);
    // serve refuses the same directory the same way, before it listens.
    if (files.length < 2) {
      const serve = await runCli([
        'serve',
        '--cert-dir',
        out,
        '--port',
        '0',
        '--metrics-port',
        '0',
      ]);
      expect(serve.code).toBe(1);
      expect(serve.stderr).toMatch(why);
      for (const f of files) expect(readFileSync(join(out, f), 'utf8')).toBe(`user's ${f}\n`);
    }
  });

  it('makes the serving pair from a CA pair it finds, leaving the CA as it was', async () => {
    const first = join(tmp(), 'ca');
    expect((await generate(first)).code).toBe(0);
    const out = join(tmp(), 'certs');
    mkdirSync(out);
    for (const f of ['ca.crt', 'ca.key']) writeFileSync(join(out, f), readFileSync(join(first, f)));
    const r = await generate(out);
    expect(r.code, r.stderr).toBe(0);
    for (const f of ['ca.crt', 'ca.key'])
      expect(readFileSync(join(out, f), 'utf8')).toBe(readFileSync(join(first, f), 'utf8'));
    const serving = new X509Certificate(readFileSync(join(out, 'tls.crt')));
    expect(serving.checkIssued(new X509Certificate(readFileSync(join(out, 'ca.crt'))))).toBe(true);
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
    // Every missing option in one run, and --help says which are required, with an example (#70).
    const none = await runCli(['certs', 'generate']);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(
      'erdma-smcr: certs generate needs --service, --namespace, --out (see --help)\n',
    );
    const help = await runCli(['certs', 'generate', '--help']);
    expect(help.stdout).toMatch(/--service <name> +webhook Service name \(required\)/);
    expect(help.stdout).toMatch(/Example:\n {2}erdma-smcr certs generate --service/);
  });
});
