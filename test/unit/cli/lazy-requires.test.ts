// The bundle's lazy requires (scripts/bundle.mjs, #43): a dependency's require of a module it uses
// only on paths our roles never take returns a stand-in that loads the real module on first use.
// Built here with esbuild from a temporary project; the result runs in a child process.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs build script, typed by its use here
import { lazyRequires } from '../../../scripts/bundle.mjs';

const plugin = lazyRequires as (pairs: [RegExp, string][]) => never;

let dir: string;

function write(path: string, text: string): void {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), text);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lazy-'));
  // Each module counts how often it was initialised.
  write(
    'node_modules/cls/index.js',
    `globalThis.inits.cls++;
     module.exports = class Cls { constructor(x) { this.x = x; } static twice(n) { return 2 * n; } };`,
  );
  write(
    'node_modules/fn/index.js',
    `globalThis.inits.fn++;
     module.exports = function fn(a) { return a + 1; };
     module.exports.key = 'v';`,
  );
  write(
    'node_modules/user/index.js',
    `const Cls = require('cls'); const fn = require('fn'); const os = require('node:os');
     module.exports = { Cls, fn, os };`,
  );
  write(
    'entry.js',
    `globalThis.inits = { cls: 0, fn: 0 };
     const { Cls, fn } = require('user');
     const before = { ...globalThis.inits };
     const c = new Cls(3);
     const out = { before, x: c.x, isCls: c instanceof Cls, twice: Cls.twice(2), call: fn(1),
       key: fn.key, has: 'key' in fn, after: { ...globalThis.inits } };
     fn(2); new Cls(4);
     out.again = { ...globalThis.inits };
     console.log(JSON.stringify(out));`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bundleWith = (pairs: [RegExp, string][], from = dir) =>
  build({
    entryPoints: [join(from, 'entry.js')],
    outfile: join(from, 'out.cjs'),
    absWorkingDir: from,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    logLevel: 'silent',
    plugins: [plugin(pairs)],
  });

describe('lazy requires in the bundle', () => {
  it('loads the real module on first use, once, and forwards new, calls, reads and `in`', async () => {
    await bundleWith([
      [/node_modules\/user\/index\.js$/, 'cls'],
      [/node_modules\/user\/index\.js$/, 'fn'],
    ]);
    const out = JSON.parse(
      execFileSync(process.execPath, [join(dir, 'out.cjs')], { encoding: 'utf8' }),
    );
    expect(out).toEqual({
      before: { cls: 0, fn: 0 },
      x: 3,
      isCls: true,
      twice: 4,
      call: 2,
      key: 'v',
      has: true,
      after: { cls: 1, fn: 1 },
      again: { cls: 1, fn: 1 },
    });
  });

  it('without the plugin the modules load with their importer (what the stand-in saves)', async () => {
    await bundleWith([[/node_modules\/user\/index\.js$/, 'fn']]);
    const out = JSON.parse(
      execFileSync(process.execPath, [join(dir, 'out.cjs')], { encoding: 'utf8' }),
    );
    expect(out.before).toEqual({ cls: 1, fn: 0 });
  });

  it('gives the same bundle wherever the project is built (the Dockerfile builds in /app)', async () => {
    const pairs: [RegExp, string][] = [[/node_modules\/user\/index\.js$/, 'fn']];
    const elsewhere = join(dir, 'elsewhere');
    cpSync(join(dir, 'node_modules'), join(elsewhere, 'node_modules'), { recursive: true });
    cpSync(join(dir, 'entry.js'), join(elsewhere, 'entry.js'));
    await bundleWith(pairs);
    await bundleWith(pairs, elsewhere);
    expect(readFileSync(join(elsewhere, 'out.cjs'), 'utf8')).toBe(
      readFileSync(join(dir, 'out.cjs'), 'utf8'),
    );
  });

  it('fails the build when a pair matches no require, naming it', async () => {
    await expect(
      bundleWith([
        [/node_modules\/user\/index\.js$/, 'fn'],
        [/node_modules\/gone\/index\.js$/, 'fn'],
      ]),
    ).rejects.toThrow(/lazy-requires: no require of fn from \/node_modules\\\/gone/);
  });
});
