// `erdma-smcr device-plugin` as its DaemonSet runs it (the bundle, bin/erdma-smcr.js, with the Node
// flags of its manifest's command and its NODE_OPTIONS), registered with the stand-in kubelet (test/helpers/fake-kubelet.ts, the upstream protocol). The bundle makes
// grpc-js's require of zlib lazy (scripts/bundle.mjs, #43): zlib must not load while nothing is
// compressed, and a gzip-compressed call from a client must still be answered as any other.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import jsyaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moduleListPreload } from '../../../bench/env.js';
import { protoLoaderApi } from '../../helpers/device-plugin-proto.js';
import { FakeKubelet } from '../../helpers/fake-kubelet.js';
import { until } from '../../helpers/wait.js';

/** gRPC's compression algorithm numbers (grpc-js CompressionAlgorithms): 2 is gzip. */
const GZIP = 2;

interface Container {
  command: string[];
  env: { name: string; value?: string }[];
}

/** The device plugin's container as manifests/base/device-plugin.yaml declares it. */
function manifestContainer(): Container {
  const ds = jsyaml.load(readFileSync('manifests/base/device-plugin.yaml', 'utf8')) as {
    spec: { template: { spec: { containers: Container[] } } };
  };
  const c = ds.spec.template.spec.containers[0];
  if (!c) throw new Error('manifests/base/device-plugin.yaml declares no container');
  return c;
}

describe('erdma-smcr device-plugin (the bundle)', () => {
  let host: string;
  let kubelet: FakeKubelet;
  let child: ChildProcess;
  let stderr = '';
  const loaded = (): string[] => JSON.parse(readFileSync(join(host, 'modules.json'), 'utf8'));
  /** The list as the process has it now: one written after this call. */
  const loadedNow = async (): Promise<string[]> => {
    const t = Date.now();
    await until('a fresh module list', () =>
      statSync(join(host, 'modules.json')).mtimeMs > t ? true : undefined,
    );
    return loaded();
  };

  beforeAll(async () => {
    host = mkdtempSync(join(tmpdir(), 'dp-bin-'));
    cpSync('test/fixtures/sysfs/node-a', host, { recursive: true });
    mkdirSync(join(host, 'kubelet/device-plugins'), { recursive: true });
    // Lists the built-in modules the process has loaded, every 100 ms.
    writeFileSync(join(host, 'modules.cjs'), moduleListPreload(join(host, 'modules.json')));
    kubelet = new FakeKubelet(join(host, 'kubelet'));
    await kubelet.start();
    const c = manifestContainer();
    const nodeOptions = c.env.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
    child = spawn(
      process.execPath,
      [
        // `node FLAGS... /app/bin/erdma-smcr.js`: its flags, on this checkout's entry point.
        ...c.command.slice(1, -1),
        'bin/erdma-smcr.js',
        'device-plugin',
        '--host-root',
        host,
        '--kubelet-dir',
        join(host, 'kubelet'),
      ],
      {
        env: {
          ...process.env,
          NODE_OPTIONS: `${nodeOptions} --require ${join(host, 'modules.cjs')}`,
          ERDMA_SMCR_AGENT_METRICS_PORT: '0',
          ERDMA_SMCR_LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    child.stderr?.on('data', (d) => (stderr += d));
    await until('the device plugin to register and list its devices', () =>
      kubelet.updates.length > 0 && existsSync(join(host, 'modules.json')) ? true : undefined,
    );
  });

  afterAll(async () => {
    if (child && child.exitCode === null) {
      await new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      });
    }
    await kubelet?.stop();
    rmSync(host, { recursive: true, force: true });
  });

  it('serves the kubelet without loading zlib, and answers a gzip-compressed Allocate', async () => {
    const ids = (kubelet.updates.at(-1) ?? []).map((d) => d.ID);
    expect(ids.length).toBeGreaterThan(0);
    await kubelet.unary('Allocate', { container_requests: [{ devicesIDs: [ids[0]] }] });
    expect(await loadedNow()).not.toContain('NativeModule zlib');

    const endpoint = kubelet.registrations[0]?.endpoint ?? '';
    const Ctor = protoLoaderApi().DevicePlugin;
    const client = new Ctor(
      `unix://${join(host, 'kubelet', 'device-plugins', endpoint)}`,
      grpc.credentials.createInsecure(),
      { 'grpc.default_compression_algorithm': GZIP },
    ) as unknown as grpc.Client & {
      Allocate: (
        req: unknown,
        cb: (e: Error | null, res: { container_responses: { devices: unknown[] }[] }) => void,
      ) => void;
    };
    try {
      const res = await new Promise<{ container_responses: { devices: unknown[] }[] }>(
        (resolve, reject) =>
          client.Allocate({ container_requests: [{ devicesIDs: [ids[0]] }] }, (e, r) =>
            e ? reject(e) : resolve(r),
          ),
      );
      expect(res.container_responses).toHaveLength(1);
      expect(res.container_responses[0]?.devices.length).toBeGreaterThan(0);
    } finally {
      client.close();
    }
    await until('the module list after the call', () =>
      loaded().includes('NativeModule zlib') ? true : undefined,
    );
    expect(child.exitCode, stderr).toBeNull();
  });
});
