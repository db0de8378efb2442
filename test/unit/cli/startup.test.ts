// What each role loads (#43): the bundle that ships (scripts/bundle.mjs, built here into a temporary
// directory) splits at every dynamic import, so a process holds only the chunks its command
// reaches. `check`, `--help` and `--version` run in CI pipelines and by hand: they must not load
// what only `serve`, `agent` or `device-plugin` need. The agent as shipped serves no device plugin
// (that is its own DaemonSet): it must not load gRPC. Memory per role is in `npm run bench memory`.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs build script, typed by its use here
import { bundle } from '../../../scripts/bundle.mjs';
// @ts-expect-error -- likewise
import { loadedBy } from '../../../scripts/bundle-report.mjs';

type Metafile = { outputs: Record<string, unknown> };
const loads = loadedBy as (m: Metafile, source?: string) => Map<string, number>;

const HEAVY = [
  '@kubernetes/client-node',
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  'fastify',
  'node-forge',
  'prom-client',
  'zod',
];

let dir: string;
let meta: Metafile;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bundle-'));
  meta = (await bundle(join(dir, 'out'), { logLevel: 'silent' })) as Metafile;
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const packages = (source?: string): string[] =>
  [...loads(meta, source).keys()].filter((k) => !k.startsWith('src/'));

describe('what each role loads, in the bundle that ships', () => {
  it('is CommonJS, Node built-ins required where they are used (#43)', () => {
    // An ES module graph costs a one-shot command Node's ES module loader (on Node 20 `--version`
    // took 1.74x bare `node` as ES modules, 1.35x as CommonJS), and making a built-in's namespace
    // runs every lazy getter of the module: on the image's Node 26 that cost the agent 4.3 MB
    // resident (`npm run bench memory`).
    const outputs = Object.keys(meta.outputs);
    expect(outputs.length).toBeGreaterThan(10);
    const texts = outputs.map((o) => {
      expect(o).toMatch(/\.cjs$/);
      return readFileSync(o, 'utf8');
    });
    for (const [i, text] of texts.entries()) {
      // It compiles as a CommonJS module's body (an import or export statement would not), and
      // holds no import(), which would load the ES module loader.
      expect(() => new Function('require', 'module', 'exports', text), outputs[i]).not.toThrow();
      expect(text.match(/(?<![\w$.])import\s*\(/g), outputs[i]).toBeNull();
    }
    const all = texts.join('\n');
    for (const m of ['fs', 'http', 'crypto']) expect(all).toContain(`("node:${m}")`);
    // The bin/ that loads it is CommonJS too (bin/package.json).
    expect(JSON.parse(readFileSync('bin/package.json', 'utf8'))).toEqual({ type: 'commonjs' });
    expect(readFileSync('bin/erdma-smcr.js', 'utf8')).toContain(
      "require('../dist/bundle/main.cjs')",
    );
  });

  it('merges small chunks: --version reads 2 files, check fewer than 16 (#43)', () => {
    const reached = (source?: string): string[] => {
      const entry = Object.keys(meta.outputs).find((o) => o.endsWith('main.cjs'))!;
      const seen = new Set<string>();
      const walk = (o: string): void => {
        if (seen.has(o)) return;
        seen.add(o);
        const { imports } = meta.outputs[o] as { imports: { path: string; kind: string }[] };
        for (const i of imports) if (i.kind !== 'dynamic-import') walk(i.path);
      };
      walk(entry);
      if (source !== undefined)
        for (const [o, v] of Object.entries(meta.outputs))
          if (Object.keys((v as { inputs: object }).inputs).includes(source)) walk(o);
      return [...seen];
    };
    expect(reached()).toHaveLength(2);
    expect(reached('src/check/check.ts').length).toBeLessThan(16);
  });

  it('--help, --version and the command line load no heavy dependency, nor the config schema', () => {
    const entry = packages();
    expect(entry).toContain('commander');
    expect(HEAVY.filter((p) => entry.includes(p))).toEqual([]);
  });

  it('check loads the policy and its output, not what the long-running roles need', () => {
    const check = packages('src/check/check.ts');
    expect(check).toEqual(expect.arrayContaining(['zod', 'js-yaml']));
    expect(HEAVY.filter((p) => p !== 'zod' && check.includes(p))).toEqual([]);
  });

  it('serve loads its web framework, node-forge only to make certificates, client-node never at start', () => {
    const serve = packages('src/roles/serve.ts');
    expect(serve).toEqual(expect.arrayContaining(['fastify', 'prom-client']));
    // Certificates are read with node:crypto (certs/x509.ts) on every check; node-forge (~5 MB
    // resident) is loaded when one is made: a rotation step, or local files that are missing.
    expect(serve).not.toContain('node-forge');
    for (const maker of ['src/certs/advance.ts', 'src/certs/local.ts'])
      expect(packages(maker), maker).toContain('node-forge');
    expect(packages('src/certs/bootstrap.ts')).not.toContain('node-forge');
    // No long-running process loads @kubernetes/client-node (~80 MB resident) at start: the live
    // view, the Secret-kept certificates and the agent talk through cluster/client.ts, and
    // cluster/kubeconfig.ts imports client-node only for a kubeconfig user with an exec plugin or
    // an auth provider.
    for (const source of [
      'src/roles/serve.ts',
      'src/cluster/live.ts',
      'src/certs/bootstrap.ts',
      'src/roles/agent.ts',
    ])
      expect(packages(source), source).not.toContain('@kubernetes/client-node');
    expect(readFileSync('src/cluster/kubeconfig.ts', 'utf8')).toContain(
      "await import('@kubernetes/client-node')",
    );
  });

  it('the agent loads neither gRPC nor a web framework; the device plugin loads gRPC', () => {
    const agent = packages('src/roles/agent.ts');
    expect(agent).toContain('prom-client');
    // Its two probes and /metrics are plain node:http (src/util/probes.ts).
    for (const p of ['fastify', '@grpc/grpc-js', '@grpc/proto-loader', 'protobufjs'])
      expect(agent, p).not.toContain(p);
    // The device plugin reads its API from a JSON descriptor with protobufjs's light build: no
    // .proto parser, no proto-loader (src/deviceplugin/api.ts).
    const plugin = packages('src/deviceplugin/plugin.ts');
    expect(plugin).toEqual(expect.arrayContaining(['@grpc/grpc-js', 'protobufjs']));
    expect(plugin).not.toContain('@grpc/proto-loader');
    const bundled = Object.values(meta.outputs).flatMap((o) =>
      Object.keys((o as { inputs: Record<string, unknown> }).inputs),
    );
    expect(bundled).toContain('node_modules/protobufjs/src/root.js');
    expect(bundled.filter((i) => /protobufjs\/src\/(parse|tokenize)\.js$/.test(i))).toEqual([]);
  });

  it("the device plugin's process loads none of the agent's duties nor its API client", () => {
    // Its process module imported the agent's (src/agent/process.ts) until #43's split: the
    // duties, the network and observation code and the cluster client were loaded and evaluated
    // in every device plugin (0.5-0.7 MB resident, docs/benchmarks.md).
    // Sources are keyed by their first three path segments (scripts/bundle-report.mjs).
    const sources = [...loads(meta, 'src/roles/device-plugin.ts').keys()];
    expect(sources.some((s) => s.startsWith('src/devices/'))).toBe(true);
    expect(sources.some((s) => s.startsWith('src/kubelet/'))).toBe(true);
    // Since #94 the device model is its own room, and since #101 a room of src/ beside the agent:
    // the node's duties (agent/node/) and the DRA driver (dra/) are not loaded either. But
    // dra/slice.ts: rollup merges that small module (the slice's shape and names, importing only
    // constants) into a chunk the device plugin shares.
    const agentOnly = sources.filter((s) =>
      /^src\/(agent\/(agent|duty|events)\.ts|agent\/(network|observe|node)$|dra\/(?!slice\.ts)|roles\/(agent|serve)\.ts|cluster\/)/.test(
        s,
      ),
    );
    expect(agentOnly).toEqual([]);
  });
});
