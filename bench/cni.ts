// Benchmark: median ADD and DEL latency of our CNI plugin against Debian's `tuning` plugin doing
// comparable work (sysctls in the pod netns), same machine, same run, same process launcher.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cleanupNetns, createNetns, runPlugin } from '../test/helpers/netns.js';
import { median, type BenchRow } from './report.js';

const ROUNDS = Number(process.env.BENCH_CNI_ROUNDS ?? 200);

/**
 * A static no-op binary: what launching any plugin costs with this launcher (Node's spawnSync,
 * a few ms, which varies from machine to machine and dilutes the ratio of the plugins' own work).
 */
function buildNoop(dir: string): string {
  const src = join(dir, 'noop.c');
  const bin = join(dir, 'noop');
  writeFileSync(src, 'int main(void) { return 0; }\n');
  const r = spawnSync('cc', ['-static', '-O2', '-o', bin, src], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot build the no-op launcher baseline: ${r.stderr}`);
  return bin;
}

export async function benchCni(): Promise<BenchRow[]> {
  spawnSync('make', ['-s', '-C', 'native'], { stdio: 'inherit' });
  const dir = mkdtempSync(join(tmpdir(), 'bench-cni-'));
  const pod = createNetns('bench');
  try {
    // veth, not dummy: the dummy driver is not in every kernel (CI's has none).
    const link = spawnSync(
      'ip',
      ['-n', pod.name, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'peer0'],
      { encoding: 'utf8' },
    );
    if (link.status !== 0) throw new Error(`cannot create eth0 in the bench netns: ${link.stderr}`);
    const prevResult = {
      cniVersion: '1.0.0',
      interfaces: [{ name: 'eth0', sandbox: pod.path }],
      ips: [],
    };
    const sysctls = {
      'net.ipv6.conf.all.disable_ipv6': '1',
      'net.ipv6.conf.default.disable_ipv6': '1',
    };
    const plugins = {
      'Debian tuning (2 sysctls)': {
        plugin: '/usr/lib/cni/tuning',
        config: {
          cniVersion: '1.0.0',
          name: 'b',
          type: 'tuning',
          sysctl: sysctls,
          dataDir: join(dir, 'tuning'),
          prevResult,
        },
      },
      'erdma-smcr (SMC-R pod: sysctls, pnet attempt, state file)': {
        plugin: 'native/build/erdma-smcr',
        config: {
          cniVersion: '1.0.0',
          name: 'b',
          type: 'erdma-smcr',
          stateDir: join(dir, 'ours'),
          pnetId: 'ABC',
          prevResult,
          runtimeConfig: {
            'io.kubernetes.cri.pod-annotations': {
              'network.alibabacloud.com/erdma-smcr': 'true',
              'smcr.erdma.io/settings': JSON.stringify({ version: 1, sysctls }),
            },
          },
        },
      },
    };
    const noop = buildNoop(dir);
    // Interleaved: every round launches the no-op and both plugins back to back (starting from a
    // different one each round), so that the machine's drift over the run hits every series alike.
    const names = Object.keys(plugins) as (keyof typeof plugins)[];
    const launch: number[] = [];
    const times = Object.fromEntries(
      names.map((n) => [n, { add: [] as number[], del: [] as number[] }]),
    );
    const timed = (
      f: () => ReturnType<typeof runPlugin>,
    ): [number, ReturnType<typeof runPlugin>] => {
      const t = performance.now();
      const r = f();
      return [performance.now() - t, r];
    };
    for (let i = 0; i < ROUNDS; i++) {
      for (let k = 0; k <= names.length; k++) {
        const j = (k + i) % (names.length + 1);
        if (j === names.length) {
          launch.push(
            timed(() =>
              runPlugin({
                plugin: noop,
                config: plugins[names[0]!].config,
                command: 'ADD',
                containerId: `c${i}`,
                netns: pod.path,
                ifname: 'eth0',
              }),
            )[0],
          );
          continue;
        }
        const name = names[j]!;
        const call = {
          plugin: plugins[name].plugin,
          config: plugins[name].config,
          containerId: `c${i}`,
          netns: pod.path,
          ifname: 'eth0',
        };
        const [addMs, a] = timed(() => runPlugin({ ...call, command: 'ADD' }));
        if (a.status !== 0) throw new Error(`${name} ADD failed: ${a.stdout}${a.stderr}`);
        const [delMs, d] = timed(() => runPlugin({ ...call, command: 'DEL' }));
        if (d.status !== 0) throw new Error(`${name} DEL failed: ${d.stdout}`);
        times[name]!.add.push(addMs);
        times[name]!.del.push(delMs);
      }
    }
    const results = Object.fromEntries(
      names.map((n) => [n, { add: median(times[n]!.add), del: median(times[n]!.del) }]),
    );
    const base = Object.values(results)[0] as { add: number; del: number };
    const launched = median(launch);
    const ours = Object.values(results)[1] as { add: number; del: number };
    // Both run as processes launched the same way; a static C binary starts faster than Go's runtime.
    return [
      ...Object.entries(results).flatMap(([name, r]) => [
        {
          bench: 'cni',
          case: `${name}: ADD median`,
          value: r.add,
          unit: 'ms',
          ratio: r.add / base.add,
        },
        {
          bench: 'cni',
          case: `${name}: DEL median`,
          value: r.del,
          unit: 'ms',
          ratio: r.del / base.del,
        },
      ]),
      {
        bench: 'cni',
        case: 'launching a static no-op the same way (in every row above)',
        value: launched,
        unit: 'ms',
      },
      {
        bench: 'cni',
        case: 'erdma-smcr ADD net of the launch, vs tuning ADD net of the launch',
        value: ours.add - launched,
        unit: 'ms',
        ratio: (ours.add - launched) / (base.add - launched),
        target: 'ADD at most 0.5× tuning',
      },
    ];
  } finally {
    cleanupNetns();
    rmSync(dir, { recursive: true, force: true });
  }
}
