// Runs our webhook as its own process (the CLI's `serve`), as it runs in a cluster.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WebhookProc {
  readonly port: number;
  readonly metricsPort: number;
  /** The CA the webhook generated in its cert dir (files mode); '' in secret mode. */
  readonly caPem: string;
  /** Prometheus text from the metrics port. */
  metrics(): Promise<string>;
  readonly certDir: string;
  readonly logs: () => string;
  stop(): Promise<void>;
}

/** Starts `serve`; with `netns`, inside that network namespace (where its API server listens). */
export async function startWebhookProc(
  host: string,
  extraArgs: string[] = [],
  netns?: string,
): Promise<WebhookProc> {
  const certDir = mkdtempSync(join(tmpdir(), 'webhook-proc-'));
  const argv = [
    'bin/erdma-smcr.js',
    'serve',
    '--host',
    host,
    '--port',
    '0',
    '--metrics-port',
    '0',
    '--cert-dir',
    certDir,
    ...extraArgs,
  ];
  const child: ChildProcess = netns
    ? spawn('nsenter', [`--net=${netns}`, process.execPath, ...argv], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`webhook did not start: ${out}${err}`)),
      30_000,
    );
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
  const metricsPort = Number(/metrics and probes on http:\/\/[^:]+:(\d+)/.exec(out)?.[1] ?? 0);
  const caFile = join(certDir, 'ca.crt');
  return {
    port,
    metricsPort,
    certDir,
    caPem: existsSync(caFile) ? readFileSync(caFile, 'utf8') : '',
    metrics: async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
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
