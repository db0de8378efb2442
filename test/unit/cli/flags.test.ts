// Flags a person mistypes get one line naming the flag and what it takes, exit 2: not the
// configuration schema's words over three lines (#70).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
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
      env: { FORCE_COLOR: '1', NO_COLOR: '1' },
    });
    expect(off.stdout).not.toContain(ESC);
    // #80 item 11: no-color.org turns colour off only for a non-empty NO_COLOR.
    const empty = await runCli(['check', 'examples/valid/pod-basic.yaml'], {
      env: { FORCE_COLOR: '1', NO_COLOR: '' },
    });
    expect(empty.stdout).toContain(`${ESC}[32mPASS`);
    expect(
      (await runCli(['check', 'examples/valid/pod-basic.yaml'], { env: { FORCE_COLOR: '0' } }))
        .stdout,
    ).not.toContain(ESC);
  });

  // The defaults --help states are written out (help must not load the config schema); this holds
  // them to the configuration's own.
  it.each([
    ['serve', '--host <addr>', (c: Config) => c.webhook.host],
    ['serve', '--port <port>', (c: Config) => String(c.webhook.port)],
    ['serve', '--metrics-port <port>', (c: Config) => String(c.webhook.metricsPort)],
    ['serve', '--cert-dir <dir>', (c: Config) => c.webhook.certDir],
    ['serve', '--cert-source <source>', (c: Config) => c.webhook.certSource],
    ['serve', '--cluster <source>', (c: Config) => c.cluster.source],
    ['agent', '--host-root <dir>', (c: Config) => c.agent.hostRoot],
    ['agent', '--kubelet-dir <dir>', (c: Config) => c.agent.kubeletDir],
    ['agent', '--slots <n>', (c: Config) => String(c.agent.slotsPerDevice)],
    ['status', '--host-root <dir>', (c: Config) => c.agent.hostRoot],
    ['devices', '--host-root <dir>', (c: Config) => c.agent.hostRoot],
  ])('%s --help gives %s its configured default', async (command, flag, value) => {
    const help = (await runCli([command, '--help'])).stdout.replace(/\s+/g, ' ');
    const at = help.indexOf(flag);
    expect(at, help).toBeGreaterThanOrEqual(0);
    const said = /\(default: ([^)]+)\)/.exec(help.slice(at))?.[1];
    expect(said).toBe(value(defaultConfig()));
  });

  it.each(['check', 'serve', 'agent', 'status', 'devices', 'certs generate'])(
    '%s --help shows examples',
    async (command) => {
      const r = await runCli([...command.split(' '), '--help']);
      expect(r.stdout).toMatch(/\nExamples?[^\n]*:\n {2}(erdma-smcr|kubectl)/);
    },
  );

  it('lists the choices and defaults in --help', async () => {
    const serve = await runCli(['serve', '--help']);
    expect(serve.stdout).toMatch(/--port <port> +HTTPS port \(default: 8443\)/);
    const top = await runCli(['--help']);
    expect(top.stdout.replace(/\s+/g, ' ')).toMatch(
      /--log-level <level> log level \(choices: "trace", "debug", "info", "warn", "error", "fatal", "silent"\)/,
    );
  });
});
