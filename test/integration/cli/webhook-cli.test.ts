import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { postH1 } from '../../helpers/tls.js';
import { startWebhookProc } from '../../harness/webhook-proc.js';

describe('erdma-smcr review', () => {
  it('prints the AdmissionReview response and exits 0 for an allowed pod', async () => {
    const r = await runCli(['review', 'docs/admission/pod-create-smcr.json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { allowed: true, patchType: 'JSONPatch' },
    });
  });

  it('exits 1 and shows the denial for a denied pod; --show-patch prints nothing without a patch', async () => {
    const r = await runCli([
      'review',
      '--show-patch',
      'docs/admission/pod-create-hostnetwork.json',
    ]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).response.status.message).toMatch(/\[host-network\]/);
    expect(r.stderr).toBe('');
  });

  it('reads stdin and decodes the patch with --show-patch', async () => {
    const r = await runCli(['review', '--show-patch', '-'], {
      stdin: readFileSync('docs/admission/pod-create-smcr.json', 'utf8'),
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stderr).map((o: { path: string }) => o.path)).toContain(
      '/metadata/annotations/smcr.erdma.io~1settings',
    );
  });

  it('exits 2 with a reason on input that is not an AdmissionReview', async () => {
    expect((await runCli(['review', '-'], { stdin: 'nope' })).stderr).toMatch(/not JSON/);
    const r = await runCli(['review', '-'], { stdin: '{"kind":"Pod"}' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/expected apiVersion admission\.k8s\.io\/v1/);
  });

  it('points to check when given a manifest, in JSON or YAML', async () => {
    const pod = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{}}';
    const r = await runCli(['review', '-'], { stdin: pod });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      '<stdin>: a Pod, not an AdmissionReview: `erdma-smcr check -` checks manifests',
    );
    const yaml = await runCli(['review', '-'], { stdin: 'apiVersion: v1\nkind: Pod\n' });
    expect(yaml.code).toBe(2);
    expect(yaml.stderr).toMatch(/not JSON: .*for manifests, use `erdma-smcr check`/);
  });
});

describe('erdma-smcr serve', () => {
  it('starts with generated certificates, prints how to call it, answers, and exits 0 on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'serve-'));
    const certDir = join(dir, 'certs');
    // Started from elsewhere than the checkout: the printed command must work from where the user is.
    const hook = await startWebhookProc({ certDir, cwd: dir, args: ['--log-level', 'warn'] });
    const { child, port } = hook;
    try {
      const out = hook.out();
      // The curl command the banner prints, run as printed (a real TLS call, SNI = the Service name).
      const curl = /^ {2}(curl .*\\\n.*)$/m.exec(out)?.[1];
      expect(curl, out).toBeDefined();
      const printed = spawnSync('sh', ['-c', `${curl} --silent --show-error`], {
        cwd: dir,
        encoding: 'utf8',
      });
      expect(printed.status, printed.stderr).toBe(0);
      expect(JSON.parse(printed.stdout).response).toMatchObject({
        allowed: true,
        patchType: 'JSONPatch',
      });
      expect(statSync(join(certDir, 'tls.key')).mode & 0o777).toBe(0o600);
      expect(statSync(join(certDir, 'ca.key')).mode & 0o777).toBe(0o600);
      const r = await postH1(
        port,
        readFileSync(join(certDir, 'ca.crt'), 'utf8'),
        '/mutate',
        readFileSync('docs/admission/pod-create-smcr.json', 'utf8'),
      );
      expect(JSON.parse(r.body).response.allowed).toBe(true);
      const code = await new Promise<number | null>((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      });
      expect(code).toBe(0);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
