// Flags a person mistypes get one line naming the flag and what it takes, exit 2: not the
// configuration schema's words over three lines (#70).
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

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

  it('lists the choices and defaults in --help', async () => {
    const serve = await runCli(['serve', '--help']);
    expect(serve.stdout).toMatch(/--port <port> +HTTPS port \(default: 8443\)/);
    const top = await runCli(['--help']);
    expect(top.stdout.replace(/\s+/g, ' ')).toMatch(
      /--log-level <level> log level \(choices: "trace", "debug", "info", "warn", "error", "fatal", "silent"\)/,
    );
  });
});
