// The memory bench's floor for a node daemon (bench/daemon-floor.cjs): Node with the built-ins it
// is given and the servers a daemon listens with, and nothing of ours. A floor that loaded our
// code, or missed a module it was given, would move what the bench calls the daemon's own cost.
// Its watch of the API server is held against a real TLS server on loopback.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { connect } from 'node:http2';
import { createServer, type Server } from 'node:https';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureLocalCerts } from '../../../src/certs/local.js';
import { freePort } from '../../harness/k8s/control-plane.js';
import { moduleListPreload } from '../../../bench/env.js';
import { until } from '../../helpers/wait.js';

let dir = '';
let child: ChildProcess | undefined;

afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  child = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

function status(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', () => resolve(undefined));
  });
}

/** The floor, with a preload that writes the modules it has loaded, and its probe port. */
async function startFloor(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ port: number; modules: () => string[] }> {
  dir ||= mkdtempSync(join(tmpdir(), 'floor-test-'));
  const list = join(dir, 'modules.json');
  writeFileSync(join(dir, 'list.cjs'), moduleListPreload(list, { everyMs: 50, files: true }));
  const port = await freePort();
  child = spawn(process.execPath, ['bench/daemon-floor.cjs', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      NODE_OPTIONS: `--require ${join(dir, 'list.cjs')}`,
      ERDMA_SMCR_AGENT_METRICS_PORT: String(port),
      ...env,
    },
    stdio: 'ignore',
  });
  await until('the floor to answer a probe', async () => ((await status(port)) ? true : undefined));
  return {
    port,
    modules: () => (existsSync(list) ? (JSON.parse(readFileSync(list, 'utf8')) as string[]) : []),
  };
}

describe("the daemons' floor", () => {
  it('loads the built-ins it is given, answers probes, and loads no file but itself', async () => {
    const floor = await startFloor(['dgram,zlib']);
    expect(await status(floor.port)).toBe(200);
    await until('a module list', () => (floor.modules().length > 0 ? true : undefined));
    const loaded = floor.modules();
    expect(loaded).toContain('NativeModule dgram');
    expect(loaded).toContain('NativeModule zlib');
    expect(loaded).not.toContain('NativeModule http2');
    // Files: the preload and the floor, nothing of the bundle or node_modules.
    const files = loaded.filter((m) => m.startsWith('/'));
    expect(files.map((f) => f.replace(dir, '<dir>')).sort()).toEqual(
      ['<dir>/list.cjs', join(process.cwd(), 'bench/daemon-floor.cjs')].sort(),
    );
  });

  it('serves HTTP/2 on the unix socket it is given, as the device plugin serves the kubelet', async () => {
    const socketDir = mkdtempSync(join(tmpdir(), 'floor-sock-'));
    try {
      const socket = join(socketDir, 'floor.sock');
      await startFloor(['', socket]);
      const session = connect('http://localhost', {
        createConnection: () => createConnection(socket),
      });
      try {
        await new Promise<void>((resolve, reject) => {
          session.once('remoteSettings', () => resolve());
          session.once('error', reject);
        });
      } finally {
        session.close();
      }
    } finally {
      rmSync(socketDir, { recursive: true, force: true });
    }
  });

  it('fails at once, naming the module, when given one Node does not have', async () => {
    dir = mkdtempSync(join(tmpdir(), 'floor-test-'));
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      let stderr = '';
      const p = spawn(process.execPath, ['bench/daemon-floor.cjs', 'no-such-module'], {
        env: { PATH: process.env.PATH ?? '', ERDMA_SMCR_AGENT_METRICS_PORT: '0' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      p.stderr?.on('data', (d) => (stderr += d));
      p.once('exit', (code) => resolve({ code, stderr }));
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("Cannot find module 'no-such-module'");
  });

  describe('with FLOOR_API_URL, a watch of the API server over TLS', () => {
    let api: Server | undefined;
    afterEach(async () => {
      api?.closeAllConnections();
      await new Promise((resolve) => api?.close(resolve));
      api = undefined;
    });

    /** An HTTPS server on loopback with the floor's CA, answering every request with `status`. */
    async function apiServer(
      status: number,
    ): Promise<{ env: Record<string, string>; seen: { url?: string; auth?: string }[] }> {
      dir = mkdtempSync(join(tmpdir(), 'floor-test-'));
      const { paths } = ensureLocalCerts({
        dir: join(dir, 'certs'),
        service: 'api',
        namespace: 'x',
      });
      const seen: { url?: string; auth?: string }[] = [];
      const server = createServer(
        { cert: readFileSync(paths.cert), key: readFileSync(paths.key) },
        (req, res) => {
          seen.push({ url: req.url, auth: req.headers.authorization });
          res.writeHead(status, { 'content-type': 'application/json' });
          if (status === 200) res.write('{"type":"BOOKMARK","object":{}}\n');
          else res.end('{"kind":"Status","code":401}');
        },
      );
      api = server;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      return {
        env: {
          FLOOR_API_URL: `https://127.0.0.1:${port}`,
          FLOOR_API_CA: paths.caCert,
          FLOOR_API_TOKEN: 'floor-token',
        },
        seen,
      };
    }

    it("holds one watch of pods open, verified with the CA it is given, with the agent's bearer token", async () => {
      const server = await apiServer(200);
      // In the order the agent loads them on Node 20, whose `_tls_wrap` loads before `tls`.
      await startFloor(['_tls_common,crypto,_tls_wrap,tls,https'], server.env);
      await until('the watch', () => (server.seen.length > 0 ? true : undefined));
      expect(server.seen).toEqual([
        { url: '/api/v1/pods?watch=true&allowWatchBookmarks=true', auth: 'Bearer floor-token' },
      ]);
      const open = await new Promise<number>((resolve, reject) =>
        api?.getConnections((err, n) => (err ? reject(err) : resolve(n))),
      );
      expect(open).toBe(1);
      expect(child?.exitCode).toBeNull();
    });

    it('exits, saying what the API server answered, when the watch is refused', async () => {
      const server = await apiServer(401);
      const port = await freePort();
      const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        let stderr = '';
        const p = spawn(process.execPath, ['bench/daemon-floor.cjs', ''], {
          env: {
            PATH: process.env.PATH ?? '',
            ERDMA_SMCR_AGENT_METRICS_PORT: String(port),
            ...server.env,
          },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        p.stderr?.on('data', (d) => (stderr += d));
        p.once('exit', (code) => resolve({ code, stderr }));
      });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('the API server answered 401');
    });
  });
});
