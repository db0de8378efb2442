// The bundle's `require` banner (scripts/bundle.mjs) is kept only in the files that name `require`:
// making a require function per file cost start-up time in each of the files `check` loads (#43).
// A file that names it in any way keeps it; the build's other outputs are left as they are.
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs build script, typed by its use here
import { withoutUnusedRequire } from '../../../scripts/bundle.mjs';

type Out = { path: string; contents: string | Uint8Array };
const strip = withoutUnusedRequire as (files: Out[]) => Out[];
const BANNER =
  "import { createRequire as __erdmaSmcrRequire } from 'node:module'; const require = __erdmaSmcrRequire(import.meta.url);";

const after = (body: string, path = 'out/chunks/c.mjs'): string => {
  const [f] = strip([{ path, contents: new TextEncoder().encode(`${BANNER}\n${body}`) }]);
  return typeof f!.contents === 'string' ? f!.contents : new TextDecoder().decode(f!.contents);
};

describe("the bundle's require banner", () => {
  it('is taken out of a file that never names require', () => {
    expect(after('import{a as r}from"./h.mjs";var o=r("node:fs");export{o as a};')).toBe(
      'import{a as r}from"./h.mjs";var o=r("node:fs");export{o as a};',
    );
    // A property of that name, or another identifier containing it, is not the binding.
    expect(after('x.require("y");var myrequire=1,require$1=2;')).not.toContain('createRequire');
  });

  it('stays in a file that calls it, tests it, or passes it on', () => {
    for (const body of [
      'var f=require("node:fs");',
      'var x=typeof require<"u"?require:void 0;',
      'g(require);',
      'var r=require.resolve("x");',
    ])
      expect(after(body), body).toBe(`${BANNER}\n${body}`);
  });

  it('leaves other outputs alone', () => {
    const legal = { path: 'out/main.mjs.LEGAL.txt', contents: `${BANNER}\nlicence` };
    expect(strip([legal])).toEqual([legal]);
    const plain = { path: 'out/chunks/p.mjs', contents: 'export const a = 1;' };
    expect(strip([plain])).toEqual([plain]);
  });
});
