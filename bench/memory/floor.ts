// A daemon's floor in the memory bench: what Node holds for it with none of our code.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { moduleListPreload, podEnv } from '../env.js';
import { type BenchRow } from '../report.js';
import { stop } from '../webhook.js';
import { freePort } from '../../test/harness/k8s/control-plane.js';
import {
  DEVICE_PLUGIN_YAML,
  Api,
  daemonSetEnv,
  daemonSetNodeFlags,
  idle,
  keepStderr,
  probePorts,
  row,
  sleep,
} from './instruments.js';

/**
 * The public built-in modules a daemon has loaded once it idles, from a start of its own with a
 * preload (in NODE_OPTIONS) that lists them: the starts whose figures are reported run as shipped.
 */
async function builtinsLoaded(
  start: (env: Record<string, string>) => Promise<ChildProcess>,
  manifest: string,
): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-builtins-'));
  try {
    const list = join(dir, 'modules.json');
    const preload = join(dir, 'list-modules.cjs');
    writeFileSync(preload, moduleListPreload(list));
    const p = await start({
      NODE_OPTIONS: `${daemonSetEnv('NODE_OPTIONS', manifest)} --require ${preload}`,
    });
    try {
      await idle(p);
      await sleep(200); // the preload's next listing, after the probes' answers
    } finally {
      await stop(p);
    }
    const loaded = JSON.parse(readFileSync(list, 'utf8')) as string[];
    return loaded
      .filter((e) => e.startsWith('NativeModule '))
      .map((e) => e.slice('NativeModule '.length))
      .filter((id) => !id.startsWith('internal/'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A daemon's floor (bench/daemon-floor.cjs): `node` with the daemon's flags and NODE_OPTIONS,
 * loading the built-ins the daemon loads and listening as it does, probed as the daemon is,
 * without any of our code. Above it is what our code and our dependencies hold; below it is
 * Node's on that runtime, whatever the code.
 */
export async function floorRow(
  node: string,
  what: string,
  manifest: string,
  start: (env: Record<string, string>) => Promise<ChildProcess>,
  base: number,
  on: string,
  api?: Api,
): Promise<BenchRow> {
  const builtins = await builtinsLoaded(start, manifest);
  const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
  const port = await freePort();
  // The device plugin serves the kubelet's gRPC over HTTP/2 on a unix socket.
  const socket = manifest === DEVICE_PLUGIN_YAML ? [join(dir, 'floor.sock')] : [];
  const floor = keepStderr(
    spawn(
      node,
      [...daemonSetNodeFlags(manifest), 'bench/daemon-floor.cjs', builtins.join(','), ...socket],
      {
        env: podEnv({
          NODE_OPTIONS: daemonSetEnv('NODE_OPTIONS', manifest),
          ERDMA_SMCR_AGENT_METRICS_PORT: String(port),
          ...(api
            ? { FLOOR_API_URL: api.cp.url, FLOOR_API_CA: api.caFile, FLOOR_API_TOKEN: api.cp.token }
            : {}),
        }),
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    ),
  );
  probePorts.set(floor, port);
  try {
    return row(
      `the ${what}'s floor${api ? ' with the API server' : ''}${on}: its flags, the ${builtins.length} built-in modules it loads, its servers${api ? ', a watch over TLS' : ''}; none of our code`,
      await idle(floor),
      base,
      undefined,
      `what Node holds for any ${what} on this runtime; what the ${what} holds above it is ours`,
    );
  } finally {
    await stop(floor);
    rmSync(dir, { recursive: true, force: true });
  }
}
