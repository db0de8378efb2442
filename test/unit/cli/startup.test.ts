// The CLI's start-up cost: `check` runs in CI pipelines and `--help`/`review` by hand, so the
// modules every invocation loads must not pull the heavy dependencies that only `serve` and
// `agent` need (@kubernetes/client-node alone takes most of a second and 40 MB of heap).
// This follows the static (non-type) imports from src/cli/main.ts; dynamic imports are where the
// heavy parts belong. Timings are in `npm run bench`, not here.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const HEAVY = [
  '@kubernetes/client-node',
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  'fastify',
  'node-forge',
  'prom-client',
];

/** Module specifiers a TypeScript file imports at load time (not `import type`, not `import()`). */
function staticImports(source: string): string[] {
  const out: string[] = [];
  const re = /^(?:import|export)\s+(?!type\b)(?:[^;'"]*?\sfrom\s+)?'([^']+)';/gms;
  for (const m of source.matchAll(re)) out.push(m[1]!);
  return out;
}

/** Every module reached from `entry` through static imports: local files and package names. */
function closure(entry: string): { files: Set<string>; packages: Map<string, string> } {
  const files = new Set<string>();
  const packages = new Map<string, string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of staticImports(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else if (!spec.startsWith('node:') && !packages.has(spec)) packages.set(spec, file);
    }
  };
  visit(resolve(entry));
  return { files, packages };
}

describe('CLI start-up', () => {
  it('the import scanner sees value imports and skips type-only ones', () => {
    const src = [
      "import type { KubeConfig } from '@kubernetes/client-node';",
      "import Fastify, {\n  type FastifyInstance,\n} from 'fastify';",
      "import './side-effect.js';",
      "export { x } from './x.js';",
      "const later = await import('node-forge');",
    ].join('\n');
    expect(staticImports(src)).toEqual(['fastify', './side-effect.js', './x.js']);
  });

  it('loads none of the heavy dependencies that only serve and agent need', () => {
    const { files, packages } = closure('src/cli/main.ts');
    expect(files.size).toBeGreaterThan(10);
    const heavy = HEAVY.filter((p) => packages.has(p)).map(
      (p) => `${p} (imported by ${packages.get(p)})`,
    );
    expect(heavy).toEqual([]);
    // The lazily loaded runtimes do carry them: the split is real, not a scanner blind spot.
    expect([...closure('src/admission/process.ts').packages.keys()]).toEqual(
      expect.arrayContaining(['fastify', 'node-forge', 'prom-client']),
    );
    // No long-running process loads @kubernetes/client-node (~80 MB resident) at start: the live
    // view, the Secret-kept certificates and the agent talk through cluster/client.ts, and
    // cluster/kubeconfig.ts imports client-node only for a kubeconfig user with an exec plugin or
    // an auth provider.
    for (const file of [
      'src/admission/process.ts',
      'src/cluster/live.ts',
      'src/certs/bootstrap.ts',
      'src/agent/process.ts',
      'src/cluster/client.ts',
      'src/cluster/kubeconfig.ts',
    ]) {
      expect([...closure(file).packages.keys()], file).not.toContain('@kubernetes/client-node');
    }
    expect(readFileSync('src/cluster/kubeconfig.ts', 'utf8')).toContain(
      "await import('@kubernetes/client-node')",
    );
    const agent = [...closure('src/agent/process.ts').packages.keys()];
    expect(agent).toEqual(expect.arrayContaining(['@grpc/grpc-js', 'prom-client']));
    // Its two probes and /metrics are plain node:http (src/util/probes.ts): no web framework.
    expect(agent).not.toContain('fastify');
  });
});
