// esbuild's __toESM remembers its wrappers in the bundle (scripts/bundle.mjs, #43): every ES module
// that imports one CommonJS module gets the same wrapper, not a copy of every export as getters.
// Built here with esbuild, minified as the bundle is, from a temporary project; run in a child.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs build script, typed by its use here
import { rememberToEsm } from '../../../scripts/bundle.mjs';

type OutFile = { path: string; contents: Uint8Array; text: string };
const remember = rememberToEsm as (
  files: OutFile[],
) => { path: string; contents: string | Uint8Array }[];

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'to-esm-'));
  const files: Record<string, string> = {
    // A CommonJS module whose exports change after it is loaded: the wrapper's getters read them live.
    'counter.cjs': `exports.n = 0; exports.bump = () => { exports.n += 1; };`,
    'a.mjs': `import * as c from './counter.cjs'; export const a = c;`,
    'b.mjs': `import * as c from './counter.cjs'; export const b = c;`,
    'use.mjs': `import { bump, n } from './counter.cjs'; export const read = () => n; export { bump };`,
    'entry.mjs': `import { a } from './a.mjs'; import { b } from './b.mjs'; import { read, bump } from './use.mjs';
      import os from 'node:os';
      bump(); bump();
      console.log(JSON.stringify({ same: a === b, a: a.n, b: b.n, read: read(), def: typeof a.default,
        os: typeof os.cpus }));`,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(rememberIt: boolean): Promise<Record<string, unknown>> {
  const result = await build({
    entryPoints: [join(dir, 'entry.mjs')],
    outfile: join(dir, 'out.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  const files = rememberIt ? remember(result.outputFiles) : result.outputFiles;
  for (const f of files) writeFileSync(f.path, f.contents);
  return JSON.parse(execFileSync(process.execPath, [join(dir, 'out.mjs')], { encoding: 'utf8' }));
}

describe("esbuild's __toESM in the bundle", () => {
  it('gives every importer of a CommonJS module one wrapper, whose exports stay live', async () => {
    expect(await run(true)).toEqual({
      same: true,
      a: 2,
      b: 2,
      read: 2,
      def: 'object',
      os: 'function',
    });
  });

  it('without it each importer gets its own copy (what remembering saves)', async () => {
    expect(await run(false)).toMatchObject({ same: false, a: 2, b: 2, read: 2 });
  });

  it('fails the build when the helper is not found once, saying what to update', () => {
    const file = (text: string): OutFile => ({
      path: join(dir, 'x.mjs'),
      contents: new TextEncoder().encode(text),
      text,
    });
    expect(() => remember([file('console.log(1);')])).toThrow(
      /__toESM helper found 0 times, not once: update TO_ESM in scripts\/bundle\.mjs/,
    );
  });
});
