// Network namespaces for tests: unique names, always removed (even when a test fails), and a
// runner for CNI plugins the way a runtime calls them (env, config on stdin, JSON on stdout).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';

export const CNI_BIN_DIR = '/usr/lib/cni';

/** Whether this machine can create network namespaces (root and iproute2). */
export function canUseNetns(): boolean {
  if (process.getuid?.() !== 0) return false;
  const r = spawnSync('ip', ['netns', 'list'], { stdio: 'ignore' });
  return r.status === 0;
}

export function hasDebianCniPlugins(): boolean {
  return existsSync(`${CNI_BIN_DIR}/bridge`) && existsSync(`${CNI_BIN_DIR}/host-local`);
}

const created = new Set<string>();

export function createNetns(prefix: string): { name: string; path: string } {
  const name = `erdma-test-${prefix}-${randomBytes(3).toString('hex')}`;
  execFileSync('ip', ['netns', 'add', name]);
  created.add(name);
  execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  return { name, path: `/var/run/netns/${name}` };
}

export function deleteNetns(name: string): void {
  spawnSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
  created.delete(name);
}

/** Removes every namespace this process created (call from afterAll; also runs at exit). */
export function cleanupNetns(): void {
  for (const name of [...created]) deleteNetns(name);
}
process.on('exit', cleanupNetns);

export function readSysctlIn(netns: string, key: string): string {
  return execFileSync(
    'ip',
    ['netns', 'exec', netns, 'cat', `/proc/sys/${key.replace(/\./g, '/')}`],
    { encoding: 'utf8' },
  ).trim();
}

export interface PluginRun {
  status: number;
  stdout: string;
  stderr: string;
  json: Record<string, unknown> | undefined;
}

export interface PluginCall {
  plugin: string;
  command: string;
  config: unknown;
  containerId?: string;
  netns?: string;
  ifname?: string;
  args?: string;
  /** Run the plugin inside this namespace (the "host" side of the chain), as a runtime in it would. */
  inNetns?: string;
  env?: Record<string, string>;
  /** A command the plugin runs under (`strace ...`): its arguments, then the plugin's path. */
  wrap?: string[];
}

export function runPlugin(call: PluginCall): PluginRun {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    CNI_COMMAND: call.command,
    CNI_PATH: CNI_BIN_DIR,
    ...(call.containerId !== undefined ? { CNI_CONTAINERID: call.containerId } : {}),
    ...(call.netns !== undefined ? { CNI_NETNS: call.netns } : {}),
    ...(call.ifname !== undefined ? { CNI_IFNAME: call.ifname } : {}),
    ...(call.args !== undefined ? { CNI_ARGS: call.args } : {}),
    ...(call.env ?? {}),
  };
  const plugin = [...(call.wrap ?? []), call.plugin];
  const [cmd, argv] = call.inNetns
    ? ['ip', ['netns', 'exec', call.inNetns, ...plugin]]
    : [plugin[0]!, plugin.slice(1)];
  const input = typeof call.config === 'string' ? call.config : JSON.stringify(call.config);
  const r = spawnSync(cmd, argv as string[], {
    env,
    input,
    encoding: 'utf8',
    timeout: 20_000,
    maxBuffer: 64 << 20,
  });
  let json: Record<string, unknown> | undefined;
  try {
    json = r.stdout.trim() ? (JSON.parse(r.stdout) as Record<string, unknown>) : undefined;
  } catch {
    json = undefined;
  }
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr, json };
}
