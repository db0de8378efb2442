// What a part of the bundle loads: from the output holding a source file (default: the entry), the
// chunks it imports statically, and the bytes of each package in them (ours by directory).
// Usage: node scripts/bundle-report.mjs META.json [SOURCE-FILE]   (META from bundle.mjs --metafile)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Bytes per package (or directory of ours) in what loading `source` (a source file such as
 * src/roles/agent.ts, or an output path) loads statically, with the entry that runs first.
 */
export function loadedBy(metafile, source) {
  const { outputs } = metafile;
  const entry = Object.keys(outputs).find((o) => outputs[o].entryPoint === 'src/cli/main.ts');
  const start =
    source === undefined
      ? [entry]
      : Object.keys(outputs).filter(
          (o) => o === source || Object.keys(outputs[o].inputs).includes(source),
        );
  if (start.length === 0) throw new Error(`no output holds ${source}`);
  const seen = new Set();
  const walk = (o) => {
    if (seen.has(o) || !outputs[o]) return;
    seen.add(o);
    for (const i of outputs[o].imports ?? []) if (i.kind !== 'dynamic-import') walk(i.path);
  };
  for (const o of [...start, entry]) walk(o);
  const bytes = new Map();
  for (const o of seen)
    for (const [input, v] of Object.entries(outputs[o].inputs)) {
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
      const key = m ? m[1] : input.split('/').slice(0, 3).join('/');
      bytes.set(key, (bytes.get(key) ?? 0) + v.bytesInOutput);
    }
  return bytes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, source] = process.argv.slice(2);
  const bytes = loadedBy(JSON.parse(readFileSync(file, 'utf8')), source);
  const total = [...bytes.values()].reduce((a, b) => a + b, 0);
  console.log(`${source ?? 'the entry'}: ${(total / 1024).toFixed(0)} KiB`);
  for (const [k, v] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, 20))
    console.log(`  ${(v / 1024).toFixed(0).padStart(5)} KiB  ${k}`);
}
