// #80 item 5: the docs name `erdma-smcr mechanisms`, `pnet`, `ueid`, `net show`, `smc ...`; those are
// the node binary's (native/build/erdma-smcr), and `erdma-smcr smc sockets --help` printed the
// top-level help with exit 0. The CLI now hands them to the node binary, and an unknown command is
// an error, --help or not. Needs the native build (test/setup/build.ts).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

const native = (...args: string[]): { status: number | null; stdout: string; stderr: string } =>
  spawnSync('native/build/erdma-smcr', args, { encoding: 'utf8' });

describe("the node binary's tools through erdma-smcr", () => {
  it('mechanisms prints what the node binary prints, with its exit code', async () => {
    const r = await runCli(['mechanisms']);
    const n = native('mechanisms');
    expect(r.code).toBe(n.status);
    // The same probes, in the same order (the values may differ between two calls: none here).
    expect(Object.keys(JSON.parse(r.stdout))).toEqual(Object.keys(JSON.parse(n.stdout)));
    expect(JSON.parse(r.stdout).mechanism).toBe(JSON.parse(n.stdout).mechanism);
  });

  it('passes every argument to the binary; --help gets its usage on stdout, exit 0 (#102)', async () => {
    for (const args of [
      ['smc', 'sockets', '--help'],
      ['mechanisms', '--help'],
      ['pnet', 'help'],
      ['bpf', '-h'],
    ]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/usage:[\s\S]*erdma-smcr smc sockets[\s\S]*erdma-smcr mechanisms/);
      expect(r.stdout).not.toMatch(/Transparent SMC-R for Kubernetes/);
      expect(r.stderr).toBe('');
    }
    // A mistake is still one: the usage on stderr, exit 2.
    const wrong = await runCli(['mechanisms', '--proc']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/usage: erdma-smcr mechanisms/);
    const bpf = await runCli(['bpf', 'status', '--dir', '/nonexistent-bpffs/erdma-smcr']);
    expect(bpf.code).toBe(0);
    expect(JSON.parse(bpf.stdout)).toEqual({
      loaded: false,
      netns: [],
      select: { registered: false, netns: [] },
    });
  });

  it('says where the binary should be when it is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-tools-'));
    const cfg = join(dir, 'config.yaml');
    writeFileSync(cfg, 'agent:\n  nativeBinary: /nonexistent/erdma-smcr\n');
    const r = await runCli(['-c', cfg, 'mechanisms']);
    rmSync(dir, { recursive: true, force: true });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /mechanisms is a command of the node binary, which is not at \/nonexistent\/erdma-smcr/,
    );
  });

  // #85 item 3: on a machine without the binary, --help printed the error meant for running it.
  it.each([
    ['mechanisms', '--help'],
    ['smc', 'sockets', '--help'],
    ['pnet', 'help'],
    ['bpf', '-h'],
  ])(
    'prints the usage of %s and where it runs when the binary is missing (exit 0)',
    async (...args) => {
      const dir = mkdtempSync(join(tmpdir(), 'node-tools-'));
      const cfg = join(dir, 'config.yaml');
      writeFileSync(cfg, 'agent:\n  nativeBinary: /nonexistent/erdma-smcr\n');
      const r = await runCli(['-c', cfg, ...args]);
      rmSync(dir, { recursive: true, force: true });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: erdma-smcr ${args[0]} [args...]`);
      expect(r.stdout).toMatch(/not at\s+\/nonexistent\/erdma-smcr on this machine/);
      expect(r.stdout).toContain(
        `kubectl -n erdma-smcr exec "$pod" -- node /app/bin/erdma-smcr.js ${args[0]} --help`,
      );
    },
  );

  it.each([['nosuch'], ['nosuch', '--help'], ['-c', 'x.yaml', 'nosuch', '--help']])(
    'refuses an unknown command: %s',
    async (...args) => {
      const r = await runCli(args);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/unknown command 'nosuch'; the commands are .*mechanisms/);
      expect(r.stdout).toBe('');
    },
  );
});
