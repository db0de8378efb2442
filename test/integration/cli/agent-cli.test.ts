// `erdma-smcr agent` as a process on a temp host tree (no cluster: labels and events report that
// they need one), and `agent --uninstall`.
import { spawn } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

const bridge = { cniVersion: '1.0.0', name: 'k8s', plugins: [{ type: 'bridge', bridge: 'cni0' }] };

describe('erdma-smcr agent', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function hostTree(): string {
    const host = mkdtempSync(join(tmpdir(), 'agent-host-'));
    dirs.push(host);
    cpSync('test/fixtures/sysfs/node-a', host, { recursive: true });
    mkdirSync(join(host, 'etc/cni/net.d'), { recursive: true });
    mkdirSync(join(host, 'opt/cni/bin'), { recursive: true });
    mkdirSync(join(host, 'kubelet/device-plugins'), { recursive: true });
    writeFileSync(join(host, 'etc/cni/net.d/10-bridge.conflist'), JSON.stringify(bridge));
    return host;
  }

  it('runs its duties with probes and metrics, reports what it lacks, and stops on SIGTERM', async () => {
    const host = hostTree();
    const child = spawn(
      process.execPath,
      [
        'bin/erdma-smcr.js',
        'agent',
        '--host-root',
        host,
        '--kubelet-dir',
        join(host, 'kubelet'),
        '--kubeconfig',
        join(host, 'none'),
      ],
      {
        env: {
          ...process.env,
          ERDMA_SMCR_AGENT_METRICS_PORT: '0',
          ERDMA_SMCR_LOG_LEVEL: 'warn',
          // Off by default, as the manifests ship it: this test asks for it.
          ERDMA_SMCR_AGENT_DEVICE_PLUGIN: 'true',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const port = await new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`agent did not start: ${out}${err}`)), 15_000);
      child.stdout.on('data', (d) => {
        out += d;
        const m = /metrics and probes on http:\/\/[^:]+:(\d+)/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(Number(m[1]));
        }
      });
    });
    try {
      expect(err).toMatch(/no Kubernetes API: node labels and pod events are off/);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.text()).toMatch(/labels: node labels needs a Kubernetes API connection/);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(/erdma_smcr_agent_cni_chained 1/);
      expect(metrics).toMatch(/erdma_smcr_agent_devices\{healthy="true"\} [1-9]/);
      expect(
        JSON.parse(readFileSync(join(host, 'etc/cni/net.d/10-bridge.conflist'), 'utf8')).plugins.at(
          -1,
        ).type,
      ).toBe('erdma-smcr');
      expect(readdirSync(join(host, 'kubelet/device-plugins'))).toContain('erdma-smcr.sock');
    } finally {
      const code = await new Promise<number | null>((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      });
      expect(code).toBe(0);
    }
    expect(readdirSync(join(host, 'kubelet/device-plugins'))).not.toContain('erdma-smcr.sock');
  });

  it('--uninstall removes our entry and binary, nothing else', async () => {
    const host = hostTree();
    writeFileSync(
      join(host, 'etc/cni/net.d/10-bridge.conflist'),
      JSON.stringify({ ...bridge, plugins: [...bridge.plugins, { type: 'erdma-smcr' }] }),
    );
    writeFileSync(join(host, 'opt/cni/bin/erdma-smcr'), 'x');
    writeFileSync(join(host, 'opt/cni/bin/bridge'), 'y');
    const r = await runCli(['agent', '--uninstall', '--host-root', host]);
    expect(r.code, r.stderr).toBe(0);
    expect(
      JSON.parse(readFileSync(join(host, 'etc/cni/net.d/10-bridge.conflist'), 'utf8')),
    ).toEqual(bridge);
    expect(readdirSync(join(host, 'opt/cni/bin'))).toEqual(['bridge']);
  });
});
