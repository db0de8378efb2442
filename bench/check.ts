// Benchmark: `erdma-smcr check` throughput on a generated corpus of mixed objects.
// Baseline in the same run: reading and parsing the same corpus without the policy. Every process
// starts in a clean environment (bench/env.ts): this machine's NODE_EXTRA_CA_CERTS made Node 20
// parse its CA bundle at start, 35 ms on both sides of the start-up ratio (#43).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import jsyaml from 'js-yaml';
import { checkPaths, runCheck } from '../src/check/check.js';
import { PROFILE_KIND } from '../src/cluster/profile.js';
import { resolveView } from '../src/cluster/offline.js';
import { readInputs } from '../src/check/inputs.js';
import { defaultConfig } from '../src/config/load.js';
import { officialNode, podEnv } from './env.js';
import { skippedRow, type BenchRow } from './report.js';

const OBJECTS = 10_000;
const PER_FILE = 100;

function makeObject(i: number): unknown {
  const ann: Record<string, string> = {};
  if (i % 4 !== 3) ann['network.alibabacloud.com/erdma-smcr'] = i % 17 === 0 ? 'maybe' : 'true';
  if (i % 5 === 0) ann['smcr.erdma.io/wmem'] = String(16_384 * (1 + (i % 8)));
  const spec = {
    ...(i % 23 === 0 ? { hostNetwork: true } : {}),
    ...(i % 3 === 0 ? { nodeSelector: { pool: i % 2 ? 'smcr' : 'legacy' } } : {}),
    containers: [
      { name: 'app', image: 'nginx', resources: { limits: { cpu: '1', memory: '1Gi' } } },
      { name: 'sidecar', image: 'envoy' },
    ],
  };
  const metadata = {
    name: `obj-${i}`,
    namespace: 'bench',
    labels: { app: `a${i % 50}` },
    annotations: ann,
  };
  if (i % 2 === 0) return { apiVersion: 'v1', kind: 'Pod', metadata, spec };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `obj-${i}`, namespace: 'bench' },
    spec: { replicas: 3, selector: { matchLabels: { app: 'x' } }, template: { metadata, spec } },
  };
}

const PROFILE = {
  kind: 'ClusterProfile',
  driverMode: 'default',
  ipFamilies: ['IPv4'],
  nodes: Array.from({ length: 50 }, (_, n) => ({
    metadata: { name: `node-${n}`, labels: { pool: n % 2 ? 'smcr' : 'legacy' } },
    status: {
      nodeInfo: {
        osImage: 'Alibaba Cloud Linux 3.2104 U10',
        kernelVersion: n % 2 ? '5.10.134-17.3.al8.x86_64' : '5.10.134-16.al8.x86_64',
      },
    },
  })),
};

function best<T>(runs: number, fn: () => T): { ms: number; value: T } {
  let ms = Infinity;
  let value!: T;
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    value = fn();
    ms = Math.min(ms, performance.now() - t);
  }
  return { ms, value };
}

/**
 * The best time of each command over `runs` rounds, the commands taking turns within a round: on a
 * machine whose speed drifts (a shared VM), a baseline timed in one block and the command in the
 * next would each see a different machine, and their ratio would move with it.
 */
export function interleavedBest(runs: number, commands: readonly (() => unknown)[]): number[] {
  const ms = commands.map(() => Infinity);
  for (let r = 0; r < runs; r++)
    commands.forEach((run, i) => {
      const t = performance.now();
      run();
      ms[i] = Math.min(ms[i] ?? Infinity, performance.now() - t);
    });
  return ms;
}

/** Rounds of bare `node -e 0` against `--version`: best of 30, each pair taking turns. */
const START_UP_ROUNDS = 30;

/** Bare `node -e 0` and the CLI's `--version` on `node`, in a pod's environment, interleaved. */
function startUp(node = process.execPath): { nodeMs: number; startMs: number } {
  const run = (args: string[]) => () => execFileSync(node, args, { stdio: 'pipe', env: podEnv() });
  const [nodeMs = NaN, startMs = NaN] = interleavedBest(START_UP_ROUNDS, [
    run(['-e', '0']),
    run(['bin/erdma-smcr.js', '--version']),
  ]);
  return { nodeMs, startMs };
}

const BIG = 100_000;

/**
 * Peak RSS (MiB) of a command, from the --import'ed bench/maxrss.mjs (exit 1 = some objects
 * denied, as designed). `slowPipe`: stdout is a pipe to a reader that starts a second late, as a
 * CI runner or `| jq` may be (time then includes that second).
 */
function peakMiB(args: string[], slowPipe = false): { mib: number; ms: number } {
  const t = performance.now();
  const argv = [process.execPath, '--import', './bench/maxrss.mjs', ...args];
  const r = slowPipe
    ? spawnSync(
        'bash',
        ['-c', 'set -o pipefail; "$0" "$@" | (sleep 1; cat > /dev/null)', ...argv],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
          encoding: 'utf8',
          maxBuffer: 1 << 30,
          env: podEnv(),
        },
      )
    : spawnSync(argv[0]!, argv.slice(1), {
        env: podEnv(),
        stdio: ['ignore', 'ignore', 'pipe'],
        encoding: 'utf8',
        maxBuffer: 1 << 30,
      });
  const ms = performance.now() - t;
  if (r.status !== 0 && r.status !== 1)
    throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return { mib: Number(/maxrss_kib=(\d+)/.exec(r.stderr)?.[1]) / 1024, ms };
}

/** `--version` and its bare `node -e 0` on the Node.js the image ships (bench/env.ts), if fetched. */
function startUpOnShippedNode(): BenchRow[] {
  const official = officialNode();
  if ('error' in official)
    return [skippedRow('check', "CLI start-up on the image's Node.js", official.error)];
  const on = `on Node ${official.version} (the image's runtime)`;
  const { nodeMs, startMs } = startUp(official.node);
  return [
    { bench: 'check', case: `bare \`node -e 0\` ${on}`, value: nodeMs, unit: 'ms', ratio: 1 },
    {
      bench: 'check',
      case: `CLI start-up (\`erdma-smcr --version\`) ${on}`,
      value: startMs,
      unit: 'ms',
      ratio: startMs / nodeMs,
      target: '#43: at most 1.5×',
    },
  ];
}

/** The corpus: the profile, then `objects` generated objects, PER_FILE to a multi-document file. */
function writeCorpus(dir: string, objects: number): void {
  writeFileSync(join(dir, '000-profile.yaml'), jsyaml.dump(PROFILE));
  for (let f = 0; f < objects / PER_FILE; f++) {
    const docs = Array.from({ length: PER_FILE }, (_, k) =>
      jsyaml.dump(makeObject(f * PER_FILE + k)),
    );
    writeFileSync(join(dir, `f${String(f).padStart(4, '0')}.yaml`), docs.join('---\n'));
  }
}

/** Memory of `check` on 100,000 objects (1,000 files), against #22's target of 150 MB. */
function peakMemoryRows(small: string): BenchRow[] {
  const dir = mkdtempSync(join(tmpdir(), 'bench-check-big-'));
  try {
    writeCorpus(dir, BIG);
    const bare = peakMiB(['-e', '0']);
    const smallText = peakMiB(['bin/erdma-smcr.js', 'check', '-o', 'text', small]);
    // Peak memory with stdout a pipe to a slow reader; time with stdout /dev/null (no wait in it).
    const big = (format: string): { mib: number; ms: number } => {
      const args = ['bin/erdma-smcr.js', 'check', '-o', format, dir];
      return { mib: peakMiB(args, true).mib, ms: peakMiB(args).ms };
    };
    const bigText = big('text');
    const bigJson = big('json');
    const structured = (['junit', 'sarif', 'policyreport'] as const).map(
      (f) => [f, big(f)] as const,
    );
    const row = (
      c: string,
      m: { mib: number; ms: number },
      objects: number,
      target?: string,
    ): BenchRow => ({
      bench: 'check',
      case: c,
      value: m.mib,
      unit: 'MiB peak RSS',
      ratio: m.mib / bare.mib,
      ...(target ? { target } : {}),
      ...(objects > 0
        ? { extra: `${Math.round((objects / m.ms) * 1000)} objects/s end to end` }
        : {}),
    });
    return [
      row('bare `node -e 0` (memory baseline)', bare, 0),
      row(`CLI text output, ${OBJECTS} objects`, smallText, OBJECTS),
      row(`CLI text output, ${BIG} objects, to a slow pipe`, bigText, BIG, 'at most 150 MB'),
      row(
        `CLI JSON output (every patch kept), ${BIG} objects, to a slow pipe`,
        bigJson,
        BIG,
        'at most 150 MB',
      ),
      ...structured.map(([f, m]) =>
        row(`CLI ${f} output, ${BIG} objects, to a slow pipe`, m, BIG, 'at most 150 MB'),
      ),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchCheck(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-check-'));
  try {
    writeCorpus(dir, OBJECTS);
    const config = defaultConfig().policy;
    const parse = best(3, () => readInputs([dir], () => ''));
    const full = best(3, () =>
      checkPaths([dir], { stdin: () => '', choice: {}, config, keep: { patch: true } }),
    );
    const isProfile = (o: { object: { kind?: unknown } }) => o.object.kind === PROFILE_KIND;
    const objects = parse.value.objects.filter((o) => !isProfile(o));
    const view = resolveView({}, parse.value.objects.find(isProfile));
    const policyOnly = best(5, () => runCheck(objects, view, config));
    const t = performance.now();
    try {
      execFileSync(process.execPath, ['bin/erdma-smcr.js', 'check', '-o', 'json', dir], {
        env: podEnv(),
        stdio: 'pipe',
        maxBuffer: 1 << 30,
      });
    } catch (err) {
      if ((err as { status?: number }).status !== 1) throw err; // 1 = some objects denied, as designed
    }
    const cliMs = performance.now() - t;
    // Start-up alone: what every `check` in a pipeline pays before reading a byte, against bare Node.
    const { nodeMs, startMs } = startUp();
    const shipped = startUpOnShippedNode();
    const n = full.value.summary.objects;
    const memory = peakMemoryRows(dir);
    return [
      {
        bench: 'check',
        case: `read+parse only (baseline), ${n} objects`,
        value: (n / parse.ms) * 1000,
        unit: 'objects/s',
        ms: parse.ms,
        ratio: 1,
      },
      {
        bench: 'check',
        case: 'policy only (in memory)',
        value: (n / policyOnly.ms) * 1000,
        unit: 'objects/s',
        ms: policyOnly.ms,
        ratio: parse.ms / policyOnly.ms,
      },
      {
        bench: 'check',
        case: 'read+parse+policy (in process)',
        value: (n / full.ms) * 1000,
        unit: 'objects/s',
        ms: full.ms,
        ratio: parse.ms / full.ms,
      },
      {
        bench: 'check',
        case: 'bare `node -e 0` (start-up baseline)',
        value: nodeMs,
        unit: 'ms',
        ratio: 1,
      },
      {
        bench: 'check',
        case: 'CLI start-up (`erdma-smcr --version`)',
        value: startMs,
        unit: 'ms',
        ratio: startMs / nodeMs,
        target: '#43: at most 1.5×',
      },
      ...shipped,
      {
        bench: 'check',
        case: 'CLI end to end (node startup, JSON output)',
        value: (n / cliMs) * 1000,
        unit: 'objects/s',
        ms: cliMs,
        ratio: parse.ms / cliMs,
        target: 'under 2000 ms',
      },
      ...memory,
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
