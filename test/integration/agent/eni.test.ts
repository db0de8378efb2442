// The agent's eRDMA ENI set-up on real network namespaces: a "node" namespace with a primary ENI
// (eth0) and veth "eRDMA ENIs" (MACs set), a "vpc" namespace holding each vSwitch's gateway and a
// peer host, and the instance metadata service at 100.100.100.200:80 in the vpc namespace, reached
// over the primary's default route as on ECS (test/harness/metadata-server.mjs: the documented
// items only, 404 for the rest). Each pass runs the agent's code inside the node namespace
// (test/harness/eni-pass.ts), so its HTTP requests and the native binary's rtnetlink work happen
// there. Everything the tests create is removed afterwards, also on failure.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EniResult } from '../../../src/agent/network/eni.js';
import { cleanupNetns, createNetns } from '../../helpers/netns.js';
import { netns, requires } from '../../helpers/requires.js';

const BINARY = join(process.cwd(), 'native/build/erdma-smcr');
/**
 * The Node flags the agent's DaemonSet runs with (V8 lite mode has no WebAssembly, so no fetch):
 * the pass runs with them, as the agent does.
 */
const AGENT_NODE_FLAGS = (
  /command: \[(.*)\]/.exec(readFileSync('manifests/base/agent.yaml', 'utf8'))?.[1] ?? ''
)
  .split(',')
  .map((s) => s.trim().replace(/^"|"$/g, ''))
  .filter((s) => s.startsWith('--'));
const PRIMARY = '00:16:3e:00:00:01';
const ENI1 = '00:16:3e:00:00:02';
const ENI2 = '00:16:3e:00:00:03';
const FOREIGN = '00:16:3e:00:00:04';
const UNKNOWN = '00:16:3e:00:00:05';
const ENIS = {
  [ENI1]: { address: '192.168.1.10', cidr: '192.168.1.0/24', gateway: '192.168.1.253' },
  [ENI2]: { address: '192.168.2.10', cidr: '192.168.2.0/24', gateway: '192.168.2.253' },
  [FOREIGN]: { address: '192.168.3.10', cidr: '192.168.3.0/24', gateway: '192.168.3.253' },
};

let node: string;
let vpc: string;
let work: string;
let server: ChildProcess | undefined;

const ip = (ns: string, ...args: string[]): string =>
  execFileSync('ip', ['-n', ns, ...args], { encoding: 'utf8' });
const ipJson = <T>(ns: string, ...args: string[]): T =>
  JSON.parse(ip(ns, '-j', ...args) || '[]') as T;

/** A veth from the node namespace (named `dev`, MAC set) into the vpc namespace (named `peer`). */
function veth(dev: string, mac: string, peer: string, vpcAddrs: string[]): void {
  execFileSync('ip', [
    'link',
    'add',
    `${dev}-${node.slice(-6)}`,
    'netns',
    node,
    'type',
    'veth',
    'peer',
    'name',
    `${peer}-${node.slice(-6)}`,
    'netns',
    vpc,
  ]);
  ip(node, 'link', 'set', `${dev}-${node.slice(-6)}`, 'name', dev);
  ip(node, 'link', 'set', dev, 'address', mac);
  ip(vpc, 'link', 'set', `${peer}-${node.slice(-6)}`, 'name', peer);
  for (const a of vpcAddrs) ip(vpc, 'addr', 'add', a, 'dev', peer);
  ip(vpc, 'link', 'set', peer, 'up');
}

async function startMetadata(extra: Record<string, unknown> = {}): Promise<void> {
  await stopMetadata();
  const cfg = {
    port: 80,
    primaryMac: PRIMARY,
    enis: ENIS,
    log: join(work, 'metadata.log'),
    ...extra,
  };
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      vpc,
      process.execPath,
      'test/harness/metadata-server.mjs',
      JSON.stringify(cfg),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  server = child;
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`metadata server exited ${code}`)));
  });
}

async function stopMetadata(): Promise<void> {
  const s = server;
  server = undefined;
  if (!s || s.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    s.once('exit', () => resolve());
    s.kill('SIGKILL');
  });
}

interface PassOptions {
  devices?: { name: string; mac: string }[];
  timeoutMs?: number;
  retries?: number;
}

/** One agent pass inside the node namespace; the results and how long it took. */
function pass(o: PassOptions = {}): { results: EniResult[]; ms: number } {
  const devices = o.devices ?? [
    { name: 'erdma_0', mac: PRIMARY },
    { name: 'erdma_1', mac: ENI1 },
    { name: 'erdma_2', mac: ENI2 },
  ];
  const arg = {
    devices,
    binary: BINARY,
    metadataUrl: 'http://100.100.100.200',
    timeoutMs: o.timeoutMs ?? 1000,
    retries: o.retries ?? 2,
    mtu: 'auto',
  };
  const t = Date.now();
  const r = spawnSync(
    'ip',
    [
      'netns',
      'exec',
      node,
      process.execPath,
      ...AGENT_NODE_FLAGS,
      '--import',
      'tsx',
      'test/harness/eni-pass.ts',
      JSON.stringify(arg),
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  if (r.status !== 0) throw new Error(`eni pass exited ${r.status}: ${r.stderr}`);
  return { results: JSON.parse(r.stdout) as EniResult[], ms: Date.now() - t };
}

interface Route {
  dst: string;
  gateway?: string;
  dev: string;
  metric?: number;
  prefsrc?: string;
}
const routes = (): Route[] => ipJson<Route[]>(node, 'route');

/** The node's routes and, per link, what the ENI set-up may change (IPv6 DAD flags come and go). */
function snapshot(): unknown {
  const links = ipJson<
    {
      ifname: string;
      mtu: number;
      flags: string[];
      addr_info: { family: string; local: string; prefixlen: number; noprefixroute?: boolean }[];
    }[]
  >(node, 'addr');
  return {
    routes: routes(),
    links: links.map((l) => ({
      name: l.ifname,
      mtu: l.mtu,
      up: l.flags.includes('UP'),
      v4: l.addr_info
        .filter((a) => a.family === 'inet')
        .map((a) => `${a.local}/${a.prefixlen}${a.noprefixroute ? ' noprefixroute' : ''}`),
    })),
  };
}
const statusOf = (results: EniResult[]): Record<string, string> =>
  Object.fromEntries(results.map((r) => [r.dev || r.device, r.status]));

/** The ENIs back to what an instance boots with: down, no address, no routes, MTU 1500. */
function resetEnis(): void {
  for (const dev of ['eth1', 'eth2']) {
    ip(node, 'addr', 'flush', 'dev', dev);
    ip(node, 'link', 'set', dev, 'down', 'mtu', '1500');
  }
}

const skip = requires('the ENI suite (real netns, rtnetlink)', netns) !== '';

beforeAll(async () => {
  if (skip) return;
  work = mkdtempSync(join(tmpdir(), 'eni-'));
  node = createNetns('eni-node').name;
  vpc = createNetns('eni-vpc').name;
  // The primary ENI, on jumbo frames: the ENIs follow it.
  veth('eth0', PRIMARY, 'vpc0', ['192.168.0.1/24', '100.100.100.200/32']);
  ip(node, 'link', 'set', 'eth0', 'mtu', '8500');
  ip(vpc, 'link', 'set', 'vpc0', 'mtu', '8500');
  ip(node, 'addr', 'add', '192.168.0.10/24', 'dev', 'eth0');
  ip(node, 'link', 'set', 'eth0', 'up');
  ip(node, 'route', 'add', 'default', 'via', '192.168.0.1', 'dev', 'eth0', 'metric', '100');
  // Each vSwitch: its gateway and a peer host, in the vpc namespace.
  veth('eth1', ENI1, 'vpc1', ['192.168.1.253/24', '192.168.1.77/24']);
  veth('eth2', ENI2, 'vpc2', ['192.168.2.253/24', '192.168.2.77/24']);
  for (const p of ['vpc1', 'vpc2']) ip(vpc, 'link', 'set', p, 'mtu', '8500');
  // A link someone else configured, with an address that is not the metadata's.
  veth('eth3', FOREIGN, 'vpc3', ['10.9.9.1/24']);
  ip(node, 'addr', 'add', '10.9.9.9/24', 'dev', 'eth3');
  ip(node, 'link', 'set', 'eth3', 'up');
  await startMetadata();
}, 60_000);

afterAll(async () => {
  await stopMetadata();
  cleanupNetns();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(skip)(
  'eRDMA ENIs configured from the instance metadata (real netns, rtnetlink)',
  () => {
    afterEach(async () => {
      if (!server) await startMetadata();
    });

    it('one pass: address without prefix route, subnet and default routes at 200 (the second ENI 201), jumbo MTU, primary untouched', () => {
      const primaryBefore = routes().filter((r) => r.dev === 'eth0');
      const { results } = pass();
      expect(statusOf(results)).toEqual({
        eth0: 'primary',
        eth1: 'configured',
        eth2: 'configured',
      });
      const rs = routes();
      expect(rs.filter((r) => r.dev === 'eth0')).toEqual(primaryBefore);
      const pick = (dev: string) =>
        rs
          .filter((r) => r.dev === dev)
          .map((r) => `${r.dst} ${r.gateway ?? '-'} ${r.metric ?? 0} ${r.prefsrc}`)
          .sort();
      expect(pick('eth1')).toEqual([
        '192.168.1.0/24 - 200 192.168.1.10',
        'default 192.168.1.253 200 192.168.1.10',
      ]);
      expect(pick('eth2')).toEqual([
        '192.168.2.0/24 - 200 192.168.2.10',
        'default 192.168.2.253 201 192.168.2.10',
      ]);
      const addr = ipJson<
        {
          ifname: string;
          mtu: number;
          operstate: string;
          addr_info: { local: string; prefixlen: number; noprefixroute?: boolean }[];
        }[]
      >(node, 'addr', 'show', 'eth1')[0]!;
      expect(addr.mtu).toBe(8500);
      expect(addr.addr_info.filter((a) => a.local.includes('.'))).toEqual([
        expect.objectContaining({ local: '192.168.1.10', prefixlen: 24, noprefixroute: true }),
      ]);
      // The metadata service saw only documented items.
      const paths = readFileSync(join(work, 'metadata.log'), 'utf8').trim().split('\n');
      expect(
        paths.every((l) =>
          /^(PUT \/latest\/api\/token|GET \/latest\/meta-data\/(mac|network\/interfaces\/macs\/[0-9a-f:]+\/(primary-ip-address|vswitch-cidr-block|gateway))) 200$/.test(
            l,
          ),
        ),
      ).toBe(true);
    });

    it("traffic to a host on each ENI's subnet takes that ENI, from its address", async () => {
      // A TCP echo of the client's address in the vpc namespace: the source the node picked shows the route.
      const echo = spawn(
        'ip',
        [
          'netns',
          'exec',
          vpc,
          process.execPath,
          '-e',
          "require('net').createServer((s) => s.end(s.remoteAddress)).listen(7070, '0.0.0.0', () => console.log('ready'))",
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      try {
        await new Promise((resolve) => echo.stdout.once('data', resolve));
        for (const [peer, dev, src] of [
          ['192.168.1.77', 'eth1', '192.168.1.10'],
          ['192.168.2.77', 'eth2', '192.168.2.10'],
        ] as const) {
          expect(ipJson<{ dev: string }[]>(node, 'route', 'get', peer)[0]?.dev).toBe(dev);
          const client = `require('net').connect(7070, '${peer}').on('data', (d) => process.stdout.write(String(d))).on('error', (e) => { console.error(e.message); process.exit(1); })`;
          const r = spawnSync('ip', ['netns', 'exec', node, process.execPath, '-e', client], {
            encoding: 'utf8',
            timeout: 10_000,
          });
          expect(r.stdout, r.stderr).toBe(src);
        }
      } finally {
        echo.kill('SIGKILL');
      }
    });

    it('a second pass changes nothing', () => {
      const before = snapshot();
      const { results } = pass();
      expect(statusOf(results)).toEqual({
        eth0: 'primary',
        eth1: 'already-configured',
        eth2: 'already-configured',
      });
      expect(snapshot()).toEqual(before);
    });

    it("leaves a link configured by someone else alone and says its address is not the metadata's", () => {
      const before = snapshot();
      const { results } = pass({ devices: [{ name: 'erdma_3', mac: FOREIGN }] });
      expect(results).toEqual([
        expect.objectContaining({
          dev: 'eth3',
          status: 'foreign',
          detail: expect.stringMatching(/10\.9\.9\.9\/24, not the metadata's 192\.168\.3\.10/),
        }),
      ]);
      expect(snapshot()).toEqual(before);
    });

    it('metadata service down: bounded retries, every ENI failed with the reason, nothing half-configured', async () => {
      resetEnis();
      const before = snapshot();
      await stopMetadata();
      const { results, ms } = pass({ timeoutMs: 300, retries: 2 });
      expect(results.map((r) => r.status)).toEqual(['failed', 'failed', 'failed']);
      expect(results[1]!.detail).toMatch(
        /instance metadata http:\/\/100\.100\.100\.200\/latest\/.*tried 3 times/,
      );
      // 3 tries with 50 + 100 ms back-off: bounded, not a hang (process start-up included).
      expect(ms).toBeLessThan(15_000);
      expect(snapshot()).toEqual(before);
    });

    it('metadata service slow: each request is cut at its time limit, and the ENIs stay untouched', async () => {
      const before = snapshot();
      await startMetadata({ delayMs: 3000 });
      const { results } = pass({ timeoutMs: 200, retries: 1 });
      expect(
        results.every((r) => r.status === 'failed' && /no answer within 200 ms/.test(r.detail)),
      ).toBe(true);
      expect(snapshot()).toEqual(before);
      await stopMetadata();
    });

    it('hardened mode: the token is fetched and sent; an unknown MAC is a 404 and a clear failure', async () => {
      await startMetadata({ requireToken: true });
      const { results } = pass({ devices: [{ name: 'erdma_1', mac: ENI1 }] });
      expect(statusOf(results)).toEqual({ eth1: 'configured' });
      const unknown = pass({ devices: [{ name: 'erdma_9', mac: UNKNOWN }] });
      expect(unknown.results[0]).toMatchObject({
        status: 'failed',
        detail: expect.stringMatching(/no network interface with MAC 00:16:3e:00:00:05/),
      });
      veth('eth5', UNKNOWN, 'vpc5', []);
      const noMeta = pass({ devices: [{ name: 'erdma_9', mac: UNKNOWN }] });
      expect(noMeta.results[0]).toMatchObject({
        dev: 'eth5',
        status: 'failed',
        detail: expect.stringMatching(/metadata does not know MAC/),
      });
    });

    it('the native step undoes itself when one netlink step fails (a default route already at that metric)', () => {
      resetEnis();
      ip(node, 'route', 'add', 'default', 'via', '192.168.0.1', 'dev', 'eth0', 'metric', '250');
      const before = snapshot();
      const r = spawnSync(
        'ip',
        [
          'netns',
          'exec',
          node,
          BINARY,
          'net',
          'configure',
          '--dev',
          'eth2',
          '--addr',
          '192.168.2.10/24',
          '--cidr',
          '192.168.2.0/24',
          '--gateway',
          '192.168.2.253',
          '--metric-subnet',
          '200',
          '--metric-default',
          '250',
          '--mtu',
          '8500',
        ],
        { encoding: 'utf8' },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/add the default route: File exists; undoing what was done/);
      expect(snapshot()).toEqual(before);
      ip(node, 'route', 'del', 'default', 'via', '192.168.0.1', 'dev', 'eth0', 'metric', '250');
    });

    it('refuses bad arguments with a usage error and touches nothing', () => {
      for (const bad of [
        ['--addr', '192.168.2.10'],
        ['--addr', '192.168.2.10/33'],
        ['--mtu', '10'],
        ['--metric-subnet', '-1'],
      ]) {
        const args = [
          'net',
          'configure',
          '--dev',
          'eth2',
          '--addr',
          '192.168.2.10/24',
          '--cidr',
          '192.168.2.0/24',
          '--gateway',
          '192.168.2.253',
          '--metric-subnet',
          '200',
          '--metric-default',
          '200',
          ...bad,
        ];
        const r = spawnSync('ip', ['netns', 'exec', node, BINARY, ...args], { encoding: 'utf8' });
        expect(r.status, bad.join(' ')).toBe(2);
      }
      expect(
        ipJson<{ addr_info: { local: string }[] }[]>(
          node,
          'addr',
          'show',
          'eth2',
        )[0]!.addr_info.filter((a) => a.local.includes('.')),
      ).toEqual([]);
    });
  },
);
