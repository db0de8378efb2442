// Bundles the CLI into dist/bundle/ (what bin/erdma-smcr.js runs and what the image ships): one
// entry file plus a chunk per lazily loaded part (each command loads only its own), dependencies
// included, minified. A process then holds only the code its role runs, and the image carries no
// node_modules. tsc (tsconfig.build.json) still type-checks and emits dist/ for the VM and bench
// scripts that load single modules. `node scripts/bundle-report.mjs` shows what each part holds.
// Usage: node scripts/bundle.mjs [--metafile FILE]
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * @grpc/grpc-js requires @grpc/proto-loader, and with it protobufjs's .proto parser, only to serve
 * channelz and ORCA, which the device plugin does not. The bundle leaves them out: a require of it
 * fails, saying so. The device plugin reads its own API without them (src/agent/deviceplugin/api.ts).
 */
const leaveOutProtoLoader = {
  name: 'leave-out-proto-loader',
  setup(b) {
    b.onResolve({ filter: /^@grpc\/proto-loader$/ }, (args) => ({
      path: args.path,
      namespace: 'left-out',
    }));
    b.onLoad({ filter: /.*/, namespace: 'left-out' }, () => ({
      contents:
        "throw new Error('@grpc/proto-loader is not in the erdma-smcr bundle (grpc-js channelz and ORCA are not served)');",
      loader: 'js',
    }));
  },
};

/**
 * Node's built-in modules are loaded with require(), also where the source imports them: Node
 * gives an imported built-in an ES module namespace, and making it reads every export, which runs
 * the module's lazy getters (node:fs then loads its streams, node:crypto WebCrypto, node:tls parses
 * its 144 root certificates into strings). Named imports become reads of the required module where
 * they are used, as for the CommonJS dependencies (#43).
 */
const builtinsByRequire = {
  name: 'builtins-by-require',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) =>
      args.kind === 'import-statement' ? { path: args.path, namespace: 'builtin' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/** Builds the bundle into `outdir`; resolves to esbuild's metafile (inputs and bytes per output). */
export async function bundle(outdir = 'dist/bundle', options = {}) {
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { main: 'src/cli/main.ts' },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    // The oldest Node the package supports (package.json engines).
    target: 'node20',
    minify: true,
    // Names are not kept (keeping them cost serve ~1.5 MB resident): the error classes whose names
    // logs show (pino's `type`) name themselves (src/errors.ts, named()).
    keepNames: false,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    legalComments: 'linked',
    // Dependencies written as CommonJS call require() for Node's built-in modules.
    banner: {
      js: "import { createRequire as __erdmaSmcrRequire } from 'node:module'; const require = __erdmaSmcrRequire(import.meta.url);",
    },
    plugins: [builtinsByRequire, leaveOutProtoLoader],
    metafile: true,
    logLevel: 'warning',
    ...options,
  });
  return result.metafile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const metafile = await bundle();
  const i = process.argv.indexOf('--metafile');
  if (i > 0) writeFileSync(process.argv[i + 1], JSON.stringify(metafile));
}
