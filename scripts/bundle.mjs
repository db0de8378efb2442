// Bundles the CLI into dist/bundle/ (what bin/erdma-smcr.js runs and what the image ships): one
// entry file plus a chunk per lazily loaded part (each command loads only its own), dependencies
// included, minified, CommonJS. esbuild bundles and splits; rollup merges its small chunks and
// writes CommonJS (toMergedCommonJs). A process then holds only the code its role runs, and the
// image carries no node_modules. tsc (tsconfig.build.json) still type-checks and emits dist/ for
// the VM and bench scripts that load single modules. `node scripts/bundle-report.mjs` shows what
// each part holds.
// Usage: node scripts/bundle.mjs [--metafile FILE]
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { rollup } from 'rollup';

/**
 * @grpc/grpc-js requires @grpc/proto-loader, and with it protobufjs's .proto parser, only to serve
 * channelz and ORCA, which the device plugin does not. The bundle leaves them out: a require of it
 * fails, saying so. The device plugin reads its own API without them (src/deviceplugin/api.ts).
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
 * they are used, as for the CommonJS dependencies (#43). Now that rollup writes CommonJS, no ES
 * namespace is made either way, but each built-in stays a bundled module required when first used:
 * left to rollup as external imports, they are required at the top of each chunk, rollup counts
 * that as a side effect and merges fewer chunks (48 files instead of 33, `check` opening 13 instead
 * of 11; start-up and memory within the noise in `npm run bench memory`).
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

/**
 * Modules a dependency requires when it loads but calls only on paths our roles never take, made
 * lazy: the require returns a stand-in that requires the real module on first use (a call, `new`,
 * or a property read) and forwards to it, so behaviour is the same when it is used. Each pair
 * [importer, module] must match a require in the build, or the build fails: an update of the
 * dependency must not quietly undo it (#43). The agent idles 0.25 MB lower on Node 20 for it; on
 * Node 26 the gain is within the run-to-run noise (`npm run bench memory`). Only require() calls
 * get a stand-in: an import of it would enumerate the stand-in's own keys, not the module's.
 */
const LAZY = [
  // sonic-boom (pino's destination) asserts once, when a stream is closed.
  [/node_modules\/sonic-boom\/index\.js$/, 'assert'],
  // pino's transports run in worker threads; we log to stdout.
  [/node_modules\/pino\/lib\/transport\.js$/, 'thread-stream'],
  [/node_modules\/thread-stream\/index\.js$/, 'assert'],
  // prom-client reads the active trace only for exemplars, which we do not enable.
  [/node_modules\/prom-client\/lib\/metrics\/processCpuTotal\.js$/, '@opentelemetry/api'],
  // grpc-js (the device plugin) inflates and deflates only compressed messages, which neither the
  // kubelet nor we send. On Node 26 zlib also loads Node's zip reader (14 modules).
  [/node_modules\/@grpc\/grpc-js\/build\/src\/compression-filter\.js$/, 'zlib'],
  [/node_modules\/@grpc\/grpc-js\/build\/src\/server-interceptors\.js$/, 'zlib'],
  // commander spawns only executable subcommands, which our CLI does not define; child_process
  // loads net and the stream modules, which a `check` writing through sonic-boom never needs.
  [/node_modules\/commander\/lib\/command\.js$/, 'node:child_process'],
];

/** An esbuild plugin that makes the requires of `pairs` ([importer RegExp, module]) lazy. */
export function lazyRequires(pairs) {
  return {
    name: 'lazy-requires',
    setup(b) {
      const used = new Set();
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind !== 'require-call' || args.namespace === 'lazy') return undefined;
        const i = pairs.findIndex(([imp, mod]) => mod === args.path && imp.test(args.importer));
        if (i < 0) return undefined;
        used.add(i);
        // One stand-in per module and directory it is resolved from (copies of a package differ),
        // named relative to the build's directory: the bundle must not depend on where it is built.
        return {
          path: `${relative(b.initialOptions.absWorkingDir ?? process.cwd(), args.resolveDir)}:${args.path}`,
          namespace: 'lazy',
          pluginData: { module: args.path, resolveDir: args.resolveDir },
        };
      });
      b.onLoad({ filter: /.*/, namespace: 'lazy' }, (args) => ({
        contents: `let real;
const load = () => (real ??= require(${JSON.stringify(args.pluginData.module)}));
module.exports = new Proxy(function lazy() {}, {
  apply: (_, self, a) => Reflect.apply(load(), self, a),
  construct: (_, a) => Reflect.construct(load(), a),
  get: (_, k) => Reflect.get(load(), k),
  has: (_, k) => Reflect.has(load(), k),
});`,
        loader: 'js',
        resolveDir: args.pluginData.resolveDir,
      }));
      b.onEnd((result) => {
        if (result.errors.length > 0) return;
        const unused = pairs.filter((_, i) => !used.has(i));
        if (unused.length > 0)
          return {
            errors: unused.map(([imp, mod]) => ({
              text: `lazy-requires: no require of ${mod} from ${imp} in the build: update LAZY in scripts/bundle.mjs`,
            })),
          };
      });
    },
  };
}

/**
 * esbuild's `__toESM` (how an ES module imports a CommonJS one: every require()d built-in and
 * dependency) copies each export of the module onto a new object as a getter, once per importing
 * module: 2,490 getters, each a closure with its own context, in the device plugin, most of them
 * copies of the same built-ins for each of our modules that imports them. The wrapper is the same
 * for every importer, so the bundle keeps one per module: the helper is wrapped where esbuild
 * defines it to remember what it made (a WeakMap per interop mode). The device plugin's V8 heap
 * holds 0.37 MB less at rest (#43). Matched on esbuild's minified helper: when an esbuild update
 * changes it, the build fails here rather than quietly undoing this.
 */
const TO_ESM =
  /=(\(([\w$]+),([\w$]+),([\w$]+)\)=>\(\4=\2!=null\?[\w$]+\([\w$]+\(\2\)\):\{\},[\w$]+\(\3\|\|!\2\|\|!\2\.__esModule\?[\w$]+\(\4,"default",\{value:\2,enumerable:!0\}\):\4,\2\)\))/g;
const REMEMBER_TO_ESM =
  '((f,c=[new WeakMap,new WeakMap])=>(m,n)=>{if(m===null||typeof m!="object"&&typeof m!="function")return f(m,n);let w=c[n?1:0],r=w.get(m);if(r===void 0)w.set(m,r=f(m,n));return r})';

/** The output files with esbuild's `__toESM` remembering its wrappers (above); exactly one has it. */
export function rememberToEsm(files) {
  let found = 0;
  const out = files.map((f) => {
    if (!f.path.endsWith('.mjs')) return { path: f.path, contents: f.contents };
    const text = f.text.replace(TO_ESM, (_, helper) => {
      found += 1;
      return `=${REMEMBER_TO_ESM}(${helper})`;
    });
    return { path: f.path, contents: text };
  });
  if (found !== 1)
    throw new Error(
      `bundle: esbuild's __toESM helper found ${found} times, not once: update TO_ESM in scripts/bundle.mjs`,
    );
  return out;
}

/** The size below which rollup merges a chunk into another (toMergedCommonJs). */
const MIN_CHUNK_BYTES = 4096;

/**
 * esbuild's split ES build (`files`, its outputs in memory) as CommonJS, its small chunks merged:
 * what the bundle ships. esbuild splits only ES modules, and on Node 20 an ES module graph costs a
 * one-shot command its loader: `--version` 1.74× bare `node` as ES modules in 8 files, 1.35× as
 * CommonJS in 2 (#43, docs/benchmarks.md). rollup merges a chunk smaller than MIN_CHUNK_BYTES into
 * another where that runs no code a role did not run before (a role may then load a few KiB it
 * never calls: 3-7 KiB per role, 66 -> 70 KiB for `--version`) and writes CommonJS: each static
 * import a require(), each dynamic import a require() when it runs. Resolves to rollup's output
 * (chunks and assets, file names relative to `outdir`).
 */
async function toMergedCommonJs(files, outdir) {
  // rememberToEsm gave each .mjs output's text as a string.
  const sources = new Map(
    files.filter((f) => f.path.endsWith('.mjs')).map((f) => [f.path, f.contents]),
  );
  const built = await rollup({
    input: { main: resolve(outdir, 'main.mjs') },
    // esbuild's output is minified and tree-shaken already; every module of it is kept.
    treeshake: false,
    // Not its account of the chunks it merged.
    logLevel: 'warn',
    plugins: [
      {
        name: 'esbuild-output',
        resolveId(id, importer) {
          // Node's built-ins (a dependency may name one without `node:`).
          if (isBuiltin(id)) return { id, external: true };
          const path = importer === undefined ? id : resolve(dirname(importer), id);
          if (!sources.has(path))
            throw new Error(`bundle: ${id} from ${importer} is not in the build`);
          return path;
        },
        load: (id) => sources.get(id),
      },
    ],
    onwarn(warning, warn) {
      // esbuild's chunks import each other both ways where a role's code is shared.
      if (warning.code !== 'CIRCULAR_DEPENDENCY') warn(warning);
    },
  });
  const { output } = await built.generate({
    format: 'cjs',
    entryFileNames: '[name].cjs',
    // esbuild's name for the chunk, without esbuild's hash: rollup adds its own.
    chunkFileNames: (c) => `chunks/${c.name.replace(/-[A-Z0-9]{8}$/, '')}-[hash].cjs`,
    experimentalMinChunkSize: MIN_CHUNK_BYTES,
    compact: true,
    generatedCode: 'es2015',
    esModule: false,
    freeze: false,
    externalLiveBindings: false,
    // A built-in imported with import() is required too: import() would load Node's ES loader.
    dynamicImportInCjs: false,
  });
  await built.close();
  return output;
}

/**
 * esbuild's metafile for the chunks rollup wrote (`output`): the same shape (each output's source
 * inputs, entry point and imports), keyed by each file's path from the working directory, so that
 * scripts/bundle-report.mjs and the start-up tests read what ships.
 */
function mergedMetafile(metafile, output, outdir, cwd) {
  const byPath = new Map(Object.entries(metafile.outputs).map(([k, v]) => [resolve(cwd, k), v]));
  const key = (fileName) => relative(cwd, join(outdir, fileName));
  const own = (fileName) => !isBuiltin(fileName);
  const outputs = {};
  for (const chunk of output.filter((o) => o.type === 'chunk')) {
    const merged = chunk.moduleIds.map((id) => byPath.get(id));
    const inputs = {};
    for (const m of merged)
      for (const [input, v] of Object.entries(m.inputs)) {
        const had = inputs[input]?.bytesInOutput ?? 0;
        inputs[input] = { bytesInOutput: had + v.bytesInOutput };
      }
    outputs[key(chunk.fileName)] = {
      ...(chunk.isEntry ? { entryPoint: byPath.get(chunk.facadeModuleId).entryPoint } : {}),
      inputs,
      imports: [
        // Node's built-ins are not outputs.
        ...chunk.imports.filter(own).map((i) => ({ path: key(i), kind: 'require-call' })),
        ...chunk.dynamicImports.filter(own).map((i) => ({ path: key(i), kind: 'dynamic-import' })),
      ],
      bytes: Buffer.byteLength(chunk.code),
    };
  }
  return { inputs: metafile.inputs, outputs };
}

/**
 * Builds the bundle into `outdir`; resolves to a metafile of what was written (esbuild's shape:
 * inputs and bytes per output). The licences esbuild collects go into one LEGAL.txt beside it.
 */
export async function bundle(outdir = 'dist/bundle', options = {}) {
  rmSync(outdir, { recursive: true, force: true });
  const cwd = options.absWorkingDir ?? process.cwd();
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
    legalComments: 'external',
    plugins: [lazyRequires(LAZY), builtinsByRequire, leaveOutProtoLoader],
    metafile: true,
    logLevel: 'warning',
    ...options,
    write: false,
  });
  const files = rememberToEsm(result.outputFiles);
  const output = await toMergedCommonJs(files, resolve(cwd, outdir));
  for (const chunk of output) {
    const path = join(outdir, chunk.fileName);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, chunk.type === 'chunk' ? chunk.code : chunk.source);
  }
  const legal = files.filter((f) => f.path.endsWith('.LEGAL.txt')).map((f) => f.contents);
  if (legal.length > 0) writeFileSync(join(outdir, 'LEGAL.txt'), Buffer.concat(legal));
  return mergedMetafile(result.metafile, output, resolve(cwd, outdir), cwd);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const metafile = await bundle();
  const i = process.argv.indexOf('--metafile');
  if (i > 0) writeFileSync(process.argv[i + 1], JSON.stringify(metafile));
}
