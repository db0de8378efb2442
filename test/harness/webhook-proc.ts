// Runs our webhook as its own process (the CLI's `serve`), as it runs in a cluster.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WebhookProc {
  readonly port: number;
  readonly caPem: string;
  readonly certDir: string;
  readonly logs: () => string;
  stop(): Promise<void>;
}

export async function startWebhookProc(host: string, extraArgs: string[] = []): Promise<WebhookProc> {
  const certDir = mkdtempSync(join(tmpdir(), 'webhook-proc-'));
  const child: ChildProcess = spawn(
    process.execPath,
    ['bin/erdma-smcr.js', 'serve', '--host', host, '--port', '0', '--metrics-port', '0', '--cert-dir', certDir, ...extraArgs],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`webhook did not start: ${out}${err}`)), 20_000);
    child.stdout?.on('data', (d) => {
      out += d;
      const m = /listening on https:\/\/[^:]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`webhook exited with ${code}: ${err}`)));
  });
  return {
    port,
    certDir,
    caPem: readFileSync(join(certDir, 'ca.crt'), 'utf8'),
    logs: () => err,
    async stop() {
      if (child.exitCode === null) {
        await new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        });
      }
      rmSync(certDir, { recursive: true, force: true });
    },
  };
}
