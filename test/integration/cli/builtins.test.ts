// What `--version` and `check` load of Node itself (#43, start-up). The bundle that ships runs as
// a CI pipeline runs it: a clean environment, standard output a pipe. Node's own list of the
// built-ins it loaded (process.moduleLoadList) is read at exit by a CommonJS preload, written with
// fs.writeSync so that the probe itself loads no stream.
//
// Reproduced first: commander required child_process at load (for executable subcommands, which
// we do not define) and our I/O asked node:tty whether stdout is a terminal; between them they
// loaded net and the stream modules: 2 ms of `--version` and 4–5 ms of a small `check` on the
// image's Node 26 (`npm run bench check`).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'builtins-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const probe = join(dir, 'probe.cjs');
writeFileSync(
  probe,
  `const fs = require('fs');
process.on('exit', () => fs.writeSync(2, '\\nLOADED ' + JSON.stringify(process.moduleLoadList) + '\\n'));
`,
);

/** The built-ins the probe's module list (in a process's stderr) names. */
function builtinsIn(stderr: string): string[] {
  const line = /\nLOADED (.*)\n/.exec(stderr)?.[1];
  if (line === undefined) throw new Error(`no module list from the probe: ${stderr}`);
  return (JSON.parse(line) as string[])
    .filter((m) => m.startsWith('NativeModule '))
    .map((m) => m.slice('NativeModule '.length));
}

/**
 * Runs the CLI, stdout a pipe (or the file descriptor given); resolves to its exit code, output and
 * the built-ins it loaded.
 */
function loaded(
  args: string[],
  stdout: 'pipe' | number = 'pipe',
): Promise<{ code: number | null; out: string; builtins: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', probe, 'bin/erdma-smcr.js', ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', stdout, 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve({ code, out, builtins: builtinsIn(err) });
      } catch (e) {
        reject(e);
      }
    });
  });
}

/** Built-ins neither command uses; each costs start-up time (net and stream the most). */
const UNUSED = ['child_process', 'net', 'tty', 'stream', 'http', 'https', 'tls', 'zlib', 'dns'];

describe('what the CLI loads of Node, stdout a pipe', () => {
  it('--version prints the version and loads none of the built-ins it does not use', async () => {
    const r = await loaded(['--version']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\d+\.\d+\.\d+/);
    expect(UNUSED.filter((m) => r.builtins.includes(m))).toEqual([]);
  });

  it("--version and check load no more of Node's ES module loader than bare node does", async () => {
    // The bundle and bin/ are CommonJS (scripts/bundle.mjs): on Node 20 an ES module graph loaded
    // the loader's job, resolver and translators (9 more modules) and took --version from 1.35x
    // to 1.74x bare `node` (#43). On Node 26 the loader is part of every start-up.
    const esm = (builtins: string[]): string[] =>
      builtins.filter((m) => m.startsWith('internal/modules/esm/'));
    const bare = builtinsIn(
      spawnSync(process.execPath, ['-r', probe, '-e', '0'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      }).stderr,
    );
    for (const args of [['--version'], ['check', 'examples/valid']]) {
      const r = await loaded(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(
        esm(r.builtins).filter((m) => !esm(bare).includes(m)),
        args.join(' '),
      ).toEqual([]);
    }
  });

  it('check, in text and in JSON, loads none of them either, and still reports', async () => {
    for (const format of ['text', 'json']) {
      const r = await loaded(['check', '-o', format, 'examples/valid']);
      expect(r.code, format).toBe(0);
      expect(r.out.length, format).toBeGreaterThan(0);
      expect(
        UNUSED.filter((m) => r.builtins.includes(m)),
        format,
      ).toEqual([]);
    }
  });

  it('a character device as stdout is asked of node:tty (the probe sees what is loaded)', async () => {
    // /dev/null is a character device, as a terminal is: whether it is one only tty.isatty says.
    const devNull = openSync('/dev/null', 'w');
    try {
      const r = await loaded(['check', 'examples/valid'], devNull);
      expect(r.code).toBe(0);
      expect(r.builtins).toContain('tty');
    } finally {
      closeSync(devNull);
    }
  });

  it('a terminal still gets colour, a pipe none (util-linux script(1) gives the terminal)', () => {
    const run = (cmd: string): string =>
      execFileSync('script', ['-qec', cmd, '/dev/null'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      });
    const cli = `${process.execPath} bin/erdma-smcr.js check examples/valid`;
    expect(run(cli)).toContain('\u001b[');
    expect(run(`${cli} | cat`)).not.toContain('\u001b[');
  });
});
