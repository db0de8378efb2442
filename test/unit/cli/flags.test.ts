// Flags a person mistypes get one line naming the flag and what it takes, exit 2: not the
// configuration schema's words over three lines (#70).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

/** The escape that starts an ANSI colour sequence. */
const ESC = String.fromCharCode(27);

describe('flags', () => {
  it.each([
    [
      ['serve', '--port', 'abc'],
      /^error: option '--port <port>' argument 'abc' is invalid\. a port is a whole number from 0 to 65535\.\n$/,
    ],
    [
      ['serve', '--metrics-port', '70000'],
      /argument '70000' is invalid\. a port is a whole number/,
    ],
    [
      ['--log-level', 'loud', 'rules'],
      /argument 'loud' is invalid\. Allowed choices are trace, debug, info, warn, error, fatal, silent/,
    ],
    [['status', '-o', 'yaml'], /argument 'yaml' is invalid\. Allowed choices are text, json/],
  ])('%j: one line, exit 2', async (args, line) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(line);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/Invalid input|→ at/);
  });

  it('prints the version with -v, --version and version', async () => {
    const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string })
      .version;
    for (const args of [['-v'], ['--version'], ['version']]) {
      const r = await runCli(args);
      expect(r).toMatchObject({ code: 0, stdout: `${version}\n` });
    }
  });

  it("shows the global options in each command's --help", async () => {
    const r = await runCli(['check', '--help']);
    expect(r.stdout).toMatch(/Global Options:[\s\S]*-c, --config <file>[\s\S]*--log-level <level>/);
  });

  it('colours check when FORCE_COLOR asks, even piped; never with NO_COLOR', async () => {
    const forced = await runCli(['check', 'examples/valid/pod-basic.yaml'], {
      env: { FORCE_COLOR: '1' },
    });
    expect(forced.stdout).toContain(`${ESC}[32mPASS`);
    const off = await runCli(['check', 'examples/valid/pod-basic.yaml'], {
      env: { FORCE_COLOR: '1', NO_COLOR: '' },
    });
    expect(off.stdout).not.toContain(ESC);
    expect(
      (await runCli(['check', 'examples/valid/pod-basic.yaml'], { env: { FORCE_COLOR: '0' } }))
        .stdout,
    ).not.toContain(ESC);
  });

  it('lists the choices and defaults in --help', async () => {
    const serve = await runCli(['serve', '--help']);
    expect(serve.stdout).toMatch(/--port <port> +HTTPS port \(default: 8443\)/);
    const top = await runCli(['--help']);
    expect(top.stdout.replace(/\s+/g, ' ')).toMatch(
      /--log-level <level> log level \(choices: "trace", "debug", "info", "warn", "error", "fatal", "silent"\)/,
    );
  });
});
