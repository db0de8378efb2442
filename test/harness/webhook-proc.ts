// Runs our webhook as its own process (the CLI's `serve`), as it runs in a cluster: the one start
// of `serve --port 0 --metrics-port 0 --cert-dir DIR` that tests and benches share.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface WebhookProc {
  readonly port: number;
  readonly metricsPort: number;
  /** The CA the webhook generated in its cert dir (files mode); '' in secret mode. */
  readonly caPem: string;
  /** Prometheus text from the metrics port. */
  metrics(): Promise<string>;
  readonly certDir: string;
  readonly child: ChildProcess;
  /** What it wrote to stdout so far (its log lines). */
  readonly out: () => string;
  /** What it wrote to stderr so far. */
  readonly logs: () => string;
  stop(): Promise<void>;
}

export interface WebhookOptions {
  /** Its address (default: serve's own, 127.0.0.1). */
  readonly host?: string;
  /** More `serve` flags (`--cluster live`, `--log-level warn`, ...). */
  readonly args?: readonly string[];
  /** Run inside this network namespace (where its API server listens). */
  readonly netns?: string;
  /** Its working directory (default this one). */
  readonly cwd?: string;
  /** Variables added to this process's environment (`NODE_OPTIONS` as a manifest sets it). */
  readonly env?: Readonly<Record<string, string>>;
  /** Node flags before the script (a manifest's command). */
  readonly nodeFlags?: readonly string[];
  /** The CLI to run (default this checkout's bin/erdma-smcr.js). */
  readonly bin?: string;
  /** Its --cert-dir (default a new temporary directory, removed by stop()). */
  readonly certDir?: string;
  /** How long it may take to print where it listens (default 30 s). */
  readonly startMs?: number;
}

/**
 * Starts `serve` on ports of its choosing and resolves once it says where it listens. The older
 * form (host, extra flags, netns) stays for the suites that use it.
 */
export async function startWebhookProc(
  hostOrOptions: string | WebhookOptions = {},
  extraArgs: string[] = [],
  netns?: string,
): Promise<WebhookProc> {
  const o: WebhookOptions =
    typeof hostOrOptions === 'string'
      ? { host: hostOrOptions, args: extraArgs, ...(netns ? { netns } : {}) }
      : hostOrOptions;
  const ownCertDir = o.certDir === undefined;
  const certDir = o.certDir ?? mkdtempSync(join(tmpdir(), 'webhook-proc-'));
  const argv = [
    ...(o.nodeFlags ?? []),
    o.bin ?? resolve('bin/erdma-smcr.js'),
    'serve',
    ...(o.host ? ['--host', o.host] : []),
    '--port',
    '0',
    '--metrics-port',
    '0',
    '--cert-dir',
    certDir,
    ...(o.args ?? []),
  ];
  const spawnOpts = {
    stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'],
    ...(o.cwd ? { cwd: o.cwd } : {}),
    ...(o.env ? { env: { ...process.env, ...o.env } } : {}),
  };
  const child: ChildProcess = o.netns
    ? spawn('nsenter', [`--net=${o.netns}`, process.execPath, ...argv], spawnOpts)
    : spawn(process.execPath, argv, spawnOpts);
  let out = '';
  let err = '';
  // Both streams are read to the end: a child whose pipe fills stops.
  child.stderr?.on('data', (d) => (err = (err + d).slice(-200_000)));
  child.stdout?.on('data', (d) => (out = (out + d).slice(-200_000)));
  const ports = await new Promise<[number, number]>((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`webhook did not start: ${out}${err}`)),
      o.startMs ?? 30_000,
    );
    const seen = (): void => {
      const m = /listening on https:\/\/[^\s]+:(\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout?.off('data', seen);
      const mp = /metrics and probes on http:\/\/[^\s]+:(\d+)/.exec(out);
      ok([Number(m[1]), Number(mp?.[1] ?? 0)]);
    };
    child.stdout?.on('data', seen);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`webhook exited with ${code}: ${err}`));
    });
  }).catch((e: unknown) => {
    if (ownCertDir) rmSync(certDir, { recursive: true, force: true });
    throw e;
  });
  const [port, metricsPort] = ports;
  const caFile = join(certDir, 'ca.crt');
  return {
    port,
    metricsPort,
    certDir,
    child,
    caPem: existsSync(caFile) ? readFileSync(caFile, 'utf8') : '',
    metrics: async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
    out: () => out,
    logs: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise<void>((done) => {
          child.once('exit', () => done());
          child.kill('SIGTERM');
        });
      }
      if (ownCertDir) rmSync(certDir, { recursive: true, force: true });
    },
  };
}
