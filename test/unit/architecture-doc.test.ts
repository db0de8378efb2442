// docs/architecture.md names files and functions; each must exist, so a rename or a removal that
// leaves the map behind fails here (#101: it named a choose_mechanism that was gone, and gave
// files work that others do now). A path is found by its own path, or as the tail of a file's
// path in the tree (the document names `agent/pod.ts` inside src/); a name (`cmd_add`,
// `decodeReview`, `POD_RULES`) must be a word of some source file.
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOTS = ['src', 'native', 'charts', 'manifests', 'scripts', 'bin', 'test', 'docs', 'proto'];
const SKIP = new Set(['node_modules', 'build', 'dist', '.git']);

function walk(dir: string, out: string[] = []): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    if (SKIP.has(name)) continue;
    const p = join(dir, name);
    if (lstatSync(p).isDirectory()) {
      out.push(`${p}/`);
      walk(p, out);
    } else out.push(p);
  }
  return out;
}

const files = ROOTS.flatMap((r) => walk(r));
const sources = files.filter((f) => /\.(ts|c|h|mjs|js)$/.test(f) && !f.startsWith('test/'));
const words = new Set(
  sources.flatMap((f) => readFileSync(f, 'utf8').match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []),
);

/** Backticked tokens of the document that name a file or directory. */
const PATH = /^[\w.-]+(\/[\w.-]+)*\/?$/;
const isPath = (s: string): boolean =>
  PATH.test(s) && (s.includes('/') || /\.(ts|c|h|mjs|js|md|yaml|json|proto)$/.test(s));
/** Tokens that name a function or constant: snake_case, camelCase, or CONSTANT_CASE. */
const isName = (s: string): boolean =>
  /^[A-Za-z_][A-Za-z0-9_]*$/.test(s) && (/_/.test(s) || /[a-z][A-Z]/.test(s));

function missing(text: string): string[] {
  const tokens = [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  const out: string[] = [];
  for (const t of new Set(tokens)) {
    // Build outputs (native/build/, dist/) are not in a checkout: the Makefile and tsc make them.
    if (isPath(t) && /^(native\/build|dist)\//.test(t)) continue;
    if (isPath(t)) {
      const found = files.some((f) => f === t || f.endsWith(`/${t}`) || f === `${t}/`);
      if (!found) out.push(`path ${t}`);
    } else if (isName(t) && !words.has(t)) out.push(`name ${t}`);
  }
  return out.sort();
}

describe('docs/architecture.md', () => {
  const text = readFileSync('docs/architecture.md', 'utf8');

  it('names only paths and functions that exist', () => {
    expect(missing(text)).toEqual([]);
  });

  it('the check can fail: a renamed function and a removed file are named', () => {
    expect(missing(`${text}\n\`choose_mechanism\` in \`native/src/nowhere.c\``)).toEqual([
      'name choose_mechanism',
      'path native/src/nowhere.c',
    ]);
  });

  it('maps every file of native/ and of the agent rooms it describes', () => {
    const named = (f: string): boolean =>
      text.includes(`\`${f}\``) || text.includes(`\`${f.replace(/^src\/agent\//, '')}\``);
    const native = files.filter((f) => /^native\/(src|preload|bpf)\/[^/]+\.c$/.test(f));
    expect(native.filter((f) => !named(f))).toEqual([]);
    const rooms = files.filter((f) => /^src\/agent\/(node|network)\/[^/]+\.ts$/.test(f));
    expect(rooms.filter((f) => !text.includes(`\`${f.split('/').pop()}\``))).toEqual([]);
  });
});
