// The device plugin over real gRPC on unix sockets, against a test kubelet that speaks the
// upstream protocol (see test/helpers/fake-kubelet.ts for why it is a stand-in).
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import http2 from 'node:http2';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { discover } from '../../../src/devices/discovery.js';
import { ErdmaDevicePlugin } from '../../../src/deviceplugin/plugin.js';
import { FakeKubelet, type DeviceMsg } from '../../helpers/fake-kubelet.js';
import { until } from '../../helpers/wait.js';
import { addDevice, removeDevice, setPortState } from '../../helpers/sysfs.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(
  opts: {
    kubeletFirst?: boolean;
    shared?: boolean;
    lines?: Record<string, unknown>[];
    takeOver?: boolean;
    heldBack?: (resource: string, others: readonly string[] | undefined) => void;
  } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'dp-'));
  const hostRoot = join(dir, 'host');
  const kubeletDir = join(dir, 'kubelet');
  addDevice(hostRoot, {
    name: 'erdma_0',
    driver: 'erdma',
    guid: '0216:3eff:fe10:f8b0',
    numa: 0,
    uverbs: 'uverbs0',
  });
  addDevice(hostRoot, {
    name: 'erdma_1',
    driver: 'erdma',
    guid: '0216:3eff:fe10:f8b1',
    numa: -1,
    uverbs: 'uverbs1',
  });
  const kubelet = new FakeKubelet(kubeletDir);
  const plugin = new ErdmaDevicePlugin({
    kubeletDir,
    resourceName: opts.shared ? 'rdma/hca' : 'aliyun/erdma',
    socketName: 'erdma-smcr.sock',
    slotsPerDevice: 2,
    allocation: 'numa',
    ...(opts.shared ? { mode: 'shared' as const } : {}),
    pollMs: 200,
    discover: () => discover({ hostRoot }),
    ...(opts.takeOver ? { takeOver: true } : {}),
    ...(opts.heldBack ? { onHeldBack: opts.heldBack } : {}),
    logger: opts.lines
      ? pino(
          { level: 'info' },
          { write: (l: string) => void opts.lines?.push(JSON.parse(l) as Record<string, unknown>) },
        )
      : pino({ level: 'silent' }),
  });
  cleanups.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => kubelet.stop(),
    () => plugin.stop(),
  );
  void opts;
  return { dir, hostRoot, kubeletDir, kubelet, plugin };
}

/** setup(), then the kubelet and the plugin started, and the plugin registered with it. */
async function registered(opts: Parameters<typeof setup>[0] = {}) {
  const made = setup(opts);
  await made.kubelet.start();
  await made.plugin.start();
  await until('registration', () => made.kubelet.registrations.length === 1);
  return made;
}

const last = (k: FakeKubelet): DeviceMsg[] | undefined => k.updates[k.updates.length - 1];

/** The IDs the plugin prefers, asked as the kubelet asks: `size` of `available`, none required. */
async function preferred(k: FakeKubelet, available: string[], size: number): Promise<string[]> {
  const res = await k.unary<{ container_responses: { deviceIDs: string[] }[] }>(
    'GetPreferredAllocation',
    {
      container_requests: [
        { available_deviceIDs: available, must_include_deviceIDs: [], allocation_size: size },
      ],
    },
  );
  return res.container_responses[0]?.deviceIDs ?? [];
}

describe('device plugin with a kubelet', () => {
  it('registers, streams devices with health and NUMA topology (omitted when unknown), and allocates', async () => {
    const { kubelet } = await registered();
    expect(kubelet.registrations[0]).toMatchObject({
      version: 'v1beta1',
      endpoint: 'erdma-smcr.sock',
      resource_name: 'aliyun/erdma',
      options: { get_preferred_allocation_available: true },
    });
    const devs = await until('first list', () => last(kubelet));
    expect(devs.map((d) => [d.ID, d.health, d.topology?.nodes?.[0]?.ID ?? null])).toEqual([
      ['erdma_0-0', 'Healthy', 0],
      ['erdma_0-1', 'Healthy', 0],
      ['erdma_1-0', 'Healthy', null],
      ['erdma_1-1', 'Healthy', null],
    ]);
    const alloc = await kubelet.unary<{
      container_responses: {
        envs: Record<string, string>;
        devices: { host_path: string; permissions: string }[];
      }[];
    }>('Allocate', {
      container_requests: [{ devicesIDs: ['erdma_0-1'] }],
    });
    expect(alloc.container_responses[0]?.envs).toEqual({
      ERDMA_DEVICES: 'erdma_0',
      ERDMA_PNETIDS: '00163E10F8B0',
    });
    expect(alloc.container_responses[0]?.devices.map((d) => [d.host_path, d.permissions])).toEqual([
      ['/dev/infiniband/uverbs0', 'rw'],
      ['/dev/infiniband/rdma_cm', 'rw'],
    ]);
    // aliyun/erdma: 2 is two devices (docs/agent.md): a slot of each before a second of one.
    expect(await preferred(kubelet, ['erdma_1-0', 'erdma_0-0', 'erdma_0-1'], 2)).toEqual([
      'erdma_0-0',
      'erdma_1-0',
    ]);
    await expect(
      kubelet.unary('Allocate', { container_requests: [{ devicesIDs: ['nope-0'] }] }),
    ).rejects.toThrow(/unknown device IDs: "nope-0"/);
  });

  it('reports a port going down and coming back within 2 s, and devices removed or added', async () => {
    const { kubelet, plugin, hostRoot } = setup();
    await kubelet.start();
    await plugin.start();
    await until('first list', () => last(kubelet));
    setPortState(hostRoot, 'erdma_0', 1, '1: DOWN');
    await until(
      'unhealthy',
      () => last(kubelet)?.find((d) => d.ID === 'erdma_0-0')?.health === 'Unhealthy',
      2000,
    );
    setPortState(hostRoot, 'erdma_0', 1, '4: ACTIVE');
    await until(
      'healthy again',
      () => last(kubelet)?.find((d) => d.ID === 'erdma_0-0')?.health === 'Healthy',
      2000,
    );
    removeDevice(hostRoot, 'erdma_1');
    await until('device gone', () => last(kubelet)?.length === 2, 2000);
    addDevice(hostRoot, {
      name: 'erdma_5',
      driver: 'erdma',
      guid: '0216:3eff:fe10:f8b5',
      numa: 1,
      uverbs: 'uverbs5',
    });
    await until('device added', () => last(kubelet)?.some((d) => d.ID === 'erdma_5-1'), 2000);
    // Calls are answered from the new list: the added device's IDs served (its NUMA node first,
    // then a second device before a second slot of it), the removed device's refused.
    expect(await preferred(kubelet, ['erdma_5-1', 'erdma_0-0', 'erdma_5-0'], 2)).toEqual([
      'erdma_5-0',
      'erdma_0-0',
    ]);
    await expect(
      kubelet.unary('Allocate', { container_requests: [{ devicesIDs: ['erdma_1-0'] }] }),
    ).rejects.toThrow(/unknown device IDs: "erdma_1-0"/);
  });

  it('keeps a shared resource Healthy while one device behind it is up, sending nothing new', async () => {
    const { kubelet, plugin, hostRoot } = setup({ shared: true });
    await kubelet.start();
    await plugin.start();
    const health = (): string | undefined =>
      last(kubelet)
        ?.map((d) => `${d.ID} ${d.health}`)
        .join(', ');
    await until('first list', () => last(kubelet));
    expect(health()).toBe('hca-0 Healthy, hca-1 Healthy');
    const sent = kubelet.updates.length;
    setPortState(hostRoot, 'erdma_0', 1, '1: DOWN');
    // Four polls: the list it would send is the same, so it sends none.
    await new Promise((r) => setTimeout(r, 800));
    expect(kubelet.updates.length).toBe(sent);
    setPortState(hostRoot, 'erdma_1', 1, '1: DOWN');
    await until('unhealthy', () => health() === 'hca-0 Unhealthy, hca-1 Unhealthy', 2000);
    setPortState(hostRoot, 'erdma_0', 1, '4: ACTIVE');
    await until('healthy again', () => health() === 'hca-0 Healthy, hca-1 Healthy', 2000);
  });

  it('re-registers when the kubelet restarts (kubelet.sock recreated)', async () => {
    const { kubelet, plugin } = setup();
    await kubelet.start();
    await plugin.start();
    await until('first list', () => kubelet.updates.length === 1);
    await kubelet.stop();
    await kubelet.start();
    await until('re-registration', () => kubelet.registrations.length === 2, 5000);
    await until('list after restart', () => kubelet.updates.length >= 2);
    expect(kubelet.errors).toEqual([]);
    // The stand-in kubelet counts a registration when the request arrives; the plugin knows it is
    // registered when the answer does.
    await until('the plugin to know it is registered', () => plugin.isRegistered);
  });

  it('registers once a kubelet that was absent at start appears, even its root directory', async () => {
    // A kubelet that never ran makes its root directory when it starts (a node booting, the
    // cluster test), so the plugin waits; a mistyped --kubelet-dir looks the same, so it says so.
    const lines: Record<string, unknown>[] = [];
    const { kubelet, kubeletDir, plugin } = setup({ lines });
    expect(existsSync(kubeletDir)).toBe(false);
    await plugin.start();
    expect(plugin.isRegistered).toBe(false);
    const warned = lines.filter((l) => l.level === 40);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ kubeletDir });
    expect(String(warned[0]?.msg)).toMatch(
      /does not exist.*change agent\.kubeletDir \(--kubelet-dir/,
    );
    await new Promise((r) => setTimeout(r, 500));
    // Waiting makes nothing on the host: the kubelet's directories are the kubelet's (#70).
    expect(existsSync(kubeletDir)).toBe(false);
    await kubelet.start();
    await until('late registration', () => kubelet.registrations.length === 1, 5000);
    expect(lines.filter((l) => l.level === 40)).toHaveLength(1);
  });

  it('says nothing of the kubelet directory when it is there', async () => {
    const lines: Record<string, unknown>[] = [];
    await registered({ lines });
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });

  it('serves again when its own socket disappears, and removes it on stop', async () => {
    const { kubelet, plugin } = await registered();
    unlinkSync(plugin.socketPath);
    await until(
      'socket back and registered',
      () => existsSync(plugin.socketPath) && kubelet.registrations.length === 2,
      5000,
    );
    await plugin.stop();
    expect(existsSync(plugin.socketPath)).toBe(false);
  });

  it('keeps running when it cannot serve again after a kubelet restart, says why once, and recovers', async () => {
    // Reproduced first: the failed restart's rejection was never handled, and Node ended the
    // process on it with a stack trace.
    const lines: Record<string, unknown>[] = [];
    const { kubelet, plugin } = await registered({ lines });
    // Our socket's path taken by a directory with something in it: it can be neither removed nor bound.
    await kubelet.stop();
    unlinkSync(plugin.socketPath);
    mkdirSync(join(plugin.socketPath, 'held'), { recursive: true });
    await kubelet.start();
    const failed = await until('the failure logged', () =>
      lines.find((l) => l.msg === 'cannot serve and register again; retrying'),
    );
    expect(failed).toMatchObject({ level: 50, retryInMs: 200, attempts: 1 });
    expect(String(failed.reason)).toContain(plugin.socketPath);
    expect(plugin.isRegistered).toBe(false);
    // Five more polls failing for the same reason: said once, not twice a poll.
    const after = lines.length;
    await new Promise((r) => setTimeout(r, 1100));
    const said = (msg: string) => lines.filter((l) => l.msg === msg).length;
    expect(lines.length).toBe(after);
    expect(said('cannot serve and register again; retrying')).toBe(1);
    expect(said('kubelet restarted or our socket vanished: serving and registering again')).toBe(1);
    rmSync(plugin.socketPath, { recursive: true });
    await until(
      'served and registered again',
      () => plugin.isRegistered && kubelet.registrations.length === 2,
      5000,
    );
    expect(lstatSync(plugin.socketPath).isSocket()).toBe(true);
    const back = lines.find((l) => l.msg === 'serving again after failed attempts');
    expect(back).toMatchObject({ level: 30 });
    expect(back?.failedAttempts).toBeGreaterThanOrEqual(5);
    expect(back?.failingForMs).toBeGreaterThanOrEqual(1000);
  });
});

/** Opens an Allocate call on the plugin's socket and sends only part of its message, as a stuck or hostile client would. */
function halfSentAllocate(socketPath: string): { close: () => void } {
  const session = http2.connect('http://localhost', {
    createConnection: () => netConnect(socketPath),
  });
  session.on('error', () => undefined);
  const stream = session.request({
    ':method': 'POST',
    ':path': '/v1beta1.DevicePlugin/Allocate',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => undefined);
  // gRPC framing: uncompressed flag, a 100-byte length, then only 10 of those bytes.
  stream.write(Buffer.concat([Buffer.from([0, 0, 0, 0, 100]), Buffer.alloc(10)]));
  return { close: () => session.destroy() };
}

// #87 item 5: the kubelet's device manager checkpoint, in the format kubelet 1.37 writes it
// (pkg/kubelet/cm/devicemanager/checkpoint: Data.RegisteredDevices by resource), says who else
// registered our resource; the real kubelet's case is test/integration/cluster/device-plugin-takeover.test.ts.
function checkpoint(kubeletDir: string, registered: Record<string, string[]>): void {
  mkdirSync(join(kubeletDir, 'device-plugins'), { recursive: true });
  writeFileSync(
    join(kubeletDir, 'device-plugins', 'kubelet_internal_checkpoint'),
    JSON.stringify({
      Data: { PodDeviceEntries: null, RegisteredDevices: registered },
      Checksum: 1,
    }),
  );
}

describe('device plugin beside another registrant of its resource', () => {
  it('does not register while the checkpoint holds IDs not its own, says so, and registers once they are gone', async () => {
    const told: (readonly string[] | undefined)[] = [];
    const made = setup({ heldBack: (_r, others) => told.push(others) });
    await made.kubelet.start();
    checkpoint(made.kubeletDir, {
      'aliyun/erdma': ['1700000000-erdma-0', '1700000000-erdma-1'],
      'nvidia.com/gpu': ['GPU-1'],
    });
    await made.plugin.start();
    await new Promise((r) => setTimeout(r, 1000));
    expect(made.kubelet.registrations).toHaveLength(0);
    expect(made.plugin.heldBackFor).toEqual(['1700000000-erdma-0', '1700000000-erdma-1']);
    expect(told).toEqual([['1700000000-erdma-0', '1700000000-erdma-1']]);
    // The kubelet drops a stopped plugin's resource after its grace period.
    checkpoint(made.kubeletDir, { 'nvidia.com/gpu': ['GPU-1'] });
    await until('registration', () => made.kubelet.registrations.length === 1);
    expect(made.plugin.heldBackFor).toBeUndefined();
    expect(told).toEqual([['1700000000-erdma-0', '1700000000-erdma-1'], undefined]);
  });

  it('registers when what the checkpoint holds is its own (its own restart, another slot count)', async () => {
    const made = setup();
    await made.kubelet.start();
    checkpoint(made.kubeletDir, { 'aliyun/erdma': ['erdma_0-0', 'erdma_0-63', 'erdma_1-5'] });
    await made.plugin.start();
    await until('registration', () => made.kubelet.registrations.length === 1);
  });

  it('registers anyway when told to take over', async () => {
    const made = setup({ takeOver: true });
    await made.kubelet.start();
    checkpoint(made.kubeletDir, { 'aliyun/erdma': ['1700000000-erdma-0'] });
    await made.plugin.start();
    await until('registration', () => made.kubelet.registrations.length === 1);
    expect(made.plugin.heldBackFor).toBeUndefined();
  });

  it('stops counting itself registered when another plugin registers after it', async () => {
    const { kubeletDir, plugin } = await registered();
    expect(plugin.isRegistered).toBe(true);
    checkpoint(kubeletDir, { 'aliyun/erdma': ['other-0'] });
    await until('held back', () => plugin.heldBackFor !== undefined);
    expect(plugin.isRegistered).toBe(false);
  });
});

describe('device plugin with hostile clients', () => {
  it('stops within its grace period while a client holds a half-sent Allocate', async () => {
    const { plugin } = await registered();
    const stuck = halfSentAllocate(plugin.socketPath);
    cleanups.push(() => stuck.close());
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await plugin.stop();
    expect(Date.now() - started).toBeLessThan(4000);
    expect(existsSync(plugin.socketPath)).toBe(false);
  });

  it('re-registers after a kubelet restart while a client holds a half-sent Allocate', async () => {
    const { kubelet, plugin } = setup();
    await kubelet.start();
    await plugin.start();
    await until('first list', () => kubelet.updates.length === 1);
    const stuck = halfSentAllocate(plugin.socketPath);
    cleanups.push(() => stuck.close());
    await kubelet.stop();
    await kubelet.start();
    await until('re-registration', () => kubelet.registrations.length === 2, 8000);
    // Counted by the stand-in kubelet as the request arrives, known to the plugin with the answer.
    await until('the plugin to know it is registered', () => plugin.isRegistered);
  });

  it('answers an Allocate naming 20,000 unknown IDs at once, with a short message', async () => {
    const { kubelet } = await registered();
    const ids = Array.from({ length: 20_000 }, (_, i) => `nope-${i}`);
    const err = await kubelet
      .unary('Allocate', { container_requests: [{ devicesIDs: ids }] })
      .catch((e: Error & { code?: number }) => e);
    expect((err as { code?: number }).code).toBe(3); // INVALID_ARGUMENT
    expect((err as Error).message.length).toBeLessThan(300);
    const mixed = await kubelet
      .unary('Allocate', {
        container_requests: [
          { devicesIDs: ['x1', 'x2', 'x3', 'x4'] },
          { devicesIDs: ['x5', 'x6', 'x7', 'erdma_0-0'] },
        ],
      })
      .catch((e: Error) => e);
    expect((mixed as Error).message).toMatch(
      /unknown device IDs: "x1", "x2", "x3", "x4", "x5" and 2 more/,
    );
  });

  it('refuses GetPreferredAllocation offers far beyond what it advertises (100,000 IDs unread, 5,000 before any sorting), and still serves', async () => {
    const { kubelet } = await registered();
    const offer = (n: number) =>
      kubelet
        .unary('GetPreferredAllocation', {
          container_requests: [
            {
              available_deviceIDs: Array.from({ length: n }, (_, i) => `erdma_0-${i}`),
              must_include_deviceIDs: [],
              allocation_size: 2,
            },
          ],
        })
        .catch((e: Error & { code?: number }) => e);
    const huge = (await offer(100_000)) as Error & { code?: number };
    expect(huge.code).toBe(8); // RESOURCE_EXHAUSTED: over the message size limit, never decoded
    const many = (await offer(5_000)) as Error & { code?: number };
    expect(many.code).toBe(3);
    expect(many.message).toMatch(/names 5000 device IDs; this plugin serves 4/);
    expect(await preferred(kubelet, ['erdma_0-0', 'erdma_1-0'], 1)).toEqual(['erdma_0-0']);
  });
});
