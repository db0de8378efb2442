// The configuration of one CLI run: the global options (--config, --log-level) over the
// environment over the file over the defaults (src/config/load.ts), plus each command's flags.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Config } from '../config/schema.js';
import type { CliIO } from '../util/io.js';
import { packagePath } from '../util/package.js';

/** The configuration for a command's flags (dotted keys, undefined left out). */
export type ConfigFor = (flags: Record<string, unknown>) => Promise<Readonly<Config>>;

/** What main.ts gives each command's file: the program to add it to, the terminal, the
 * configuration for its flags, and where its exit code goes. */
export interface CommandContext {
  readonly program: Command;
  readonly io: CliIO;
  readonly configFor: ConfigFor;
  readonly setCode: (c: number) => void;
}

export interface GlobalOpts {
  config?: string;
  logLevel?: string;
}

/** Loaded when a command runs, not for --help or --version (the schema is most of the CLI's code). */
export async function configFrom(
  globals: GlobalOpts,
  io: CliIO,
  flags: Record<string, unknown> = {},
): Promise<Readonly<Config>> {
  const { loadConfig } = await import('../config/load.js');
  return loadConfig({
    ...(globals.config ? { file: globals.config } : {}),
    env: io.env,
    flags: { logLevel: globals.logLevel, ...flags },
  });
}

/** This package's version (package.json). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}
