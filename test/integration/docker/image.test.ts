// The image itself, built from our Dockerfile by buildah (test/harness/image/build.sh; the suite
// substitutes only the base image, see the README) and run by containerd 2 and Debian's runc the
// way people try an image first: `--version`, then the default command with no arguments.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONTAINERD_BIN,
  containerdAvailable,
  startContainerd,
  type Containerd,
} from '../../harness/containerd.js';
import { cleanupNetns, createNetns } from '../../helpers/netns.js';
import { requires } from '../../helpers/requires.js';

const IMAGE = 'localhost/erdma-smcr:test';
const skip = requires('the image suite (buildah, containerd)', containerdAvailable) !== '';

interface ImageConfig {
  config: {
    User?: string;
    Entrypoint?: string[];
    Cmd?: string[];
    Env?: string[];
    WorkingDir?: string;
  };
}

let archive: string;
let rootfs: string;
let config: ImageConfig;
let layerBytes = 0;
let containerd: Containerd | undefined;
const running: ChildProcess[] = [];

/** Reads a file of the OCI archive without unpacking it all. */
const fromArchive = (path: string): Buffer =>
  execFileSync('tar', ['-xOf', archive, path], { maxBuffer: 512 << 20 });
const blob = (digest: string): string => `blobs/sha256/${digest.replace('sha256:', '')}`;

beforeAll(async () => {
  if (skip) return;
  // Asynchronously: a cold build takes minutes, and the worker must keep talking to vitest.
  const built = await new Promise<string>((resolve, reject) => {
    const b = spawn('bash', ['test/harness/image/build.sh'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    b.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    b.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
    b.once('exit', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`image build failed (${code}): ${stderr}`)),
    );
  });
  archive = built.trim().split('\n').pop()!;
  const index = JSON.parse(fromArchive('index.json').toString()) as {
    manifests: { digest: string }[];
  };
  const manifest = JSON.parse(fromArchive(blob(index.manifests[0]!.digest)).toString()) as {
    config: { digest: string };
    layers: { digest: string; size: number }[];
  };
  config = JSON.parse(fromArchive(blob(manifest.config.digest)).toString()) as ImageConfig;
  // The runtime filesystem, layer by layer (for what it holds, not to run it).
  rootfs = mkdtempSync(join(tmpdir(), 'image-rootfs-'));
  for (const layer of manifest.layers) {
    layerBytes += layer.size;
    execFileSync('sh', [
      '-c',
      `tar -xOf "$0" "$1" | tar -xz -C "$2" --no-same-owner 2>/dev/null || true`,
      archive,
      blob(layer.digest),
      rootfs,
    ]);
  }
  const ns = createNetns('image');
  containerd = await startContainerd({
    enter: [`--net=${ns.path}`],
    cni: {
      conflist: { cniVersion: '1.0.0', name: 'none', plugins: [{ type: 'loopback' }] },
      plugins: { loopback: '/usr/lib/cni/loopback' },
    },
    sandboxImage: IMAGE,
    images: [archive],
  });
}, 1_500_000);

afterAll(async () => {
  for (const c of running) c.kill('SIGKILL');
  if (containerd) {
    for (const id of ['image-default']) {
      try {
        containerd.ctr(['task', 'kill', '-s', 'SIGKILL', id]);
      } catch {
        // not running
      }
    }
    await containerd.stop();
  }
  cleanupNetns();
  if (rootfs) rmSync(rootfs, { recursive: true, force: true });
});

/** `docker run IMAGE ARGS...`: the image's entrypoint with ARGS, in a new container. */
function run(id: string, args: readonly string[]): string {
  return containerd!.ctr([
    'run',
    '--rm',
    '--snapshotter',
    'native',
    IMAGE,
    id,
    ...(config.config.Entrypoint ?? []),
    ...args,
  ]);
}

describe.skipIf(skip)('the image built from our Dockerfile', () => {
  it('runs as 65532 with the CLI as entrypoint and serve as its default command', () => {
    expect(config.config.User).toBe('65532:65532');
    expect(config.config.Entrypoint).toEqual(['node', '/app/bin/erdma-smcr.js']);
    expect(config.config.Cmd).toEqual(['serve']);
    const uid = containerd!.ctr([
      'run',
      '--rm',
      '--snapshotter',
      'native',
      IMAGE,
      'image-uid',
      'node',
      '-e',
      'process.stdout.write(`${process.getuid()}:${process.getgid()}`)',
    ]);
    expect(uid).toBe('65532:65532');
  });

  it('answers --version with the package version', () => {
    const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string })
      .version;
    expect(run('image-version', ['--version']).trim()).toBe(version);
  });

  it('checks manifests mounted read-only, as docs/check.md runs it in CI (docker run -v, -w)', () => {
    // The image as a CLI: the repository's examples bound in, the working directory set, the
    // JUnit report on stdout. The valid examples pass (exit 0); ctr fails on any other exit.
    const junit = containerd!.ctr([
      'run',
      '--rm',
      '--snapshotter',
      'native',
      '--mount',
      `type=bind,src=${join(process.cwd(), 'examples')},dst=/work/examples,options=rbind:ro`,
      '--cwd',
      '/work',
      IMAGE,
      'image-check',
      ...(config.config.Entrypoint ?? []),
      'check',
      '-o',
      'junit',
      'examples/valid/',
    ]);
    expect(junit).toMatch(/<testsuites [^>]*tests="7"[^>]*failures="0"/);
    expect(junit).toMatch(
      /<testcase [^>]*name="Pod demo\/redis \(examples\/valid\/pod-basic\.yaml:3\)"/,
    );
  });

  it('carries a static CNI plugin, no compiler and no dev dependencies, and says how big it is', () => {
    const plugin = join(rootfs, 'app/native/build/erdma-smcr');
    expect(execFileSync('file', ['-b', plugin], { encoding: 'utf8' })).toMatch(/statically linked/);
    for (const tool of ['gcc', 'cc', 'g++', 'make', 'clang', 'tsc']) {
      for (const dir of ['usr/bin', 'usr/local/bin'])
        expect(existsSync(join(rootfs, dir, tool)), `${dir}/${tool}`).toBe(false);
    }
    // Dependencies ship inside the bundle (dist/bundle), dev dependencies nowhere.
    expect(existsSync(join(rootfs, 'app/node_modules'))).toBe(false);
    // A root of node, its libraries and chroot (#43): no shell, no npm, no package manager.
    for (const absent of ['bin/sh', 'usr/bin/apt-get', 'usr/bin/dpkg', 'usr/local/bin/npm'])
      expect(existsSync(join(rootfs, absent)), absent).toBe(false);
    // chroot runs (the agent runs the host's modprobe through it), and says so from its own libraries.
    expect(
      containerd!.ctr([
        'run',
        '--rm',
        '--snapshotter',
        'native',
        IMAGE,
        'image-chroot',
        'chroot',
        '--version',
      ]),
    ).toMatch(/chroot \(GNU coreutils\)/);
    const unpacked = Number(
      execFileSync('du', ['-sb', rootfs], { encoding: 'utf8' }).split('\t')[0],
    );
    console.log(
      `image ${IMAGE}: ${(layerBytes / 2 ** 20).toFixed(0)} MiB compressed, ${(unpacked / 2 ** 20).toFixed(0)} MiB unpacked`,
    );
    expect(statSync(plugin).size).toBeGreaterThan(0);
  });

  it('serves with its default command and no arguments: generated certificates, a real TLS answer, exit 0 on SIGTERM', async () => {
    const child = spawn(
      join(CONTAINERD_BIN, 'ctr'),
      [
        '--address',
        containerd!.socket,
        '--namespace',
        'k8s.io',
        'run',
        '--rm',
        '--snapshotter',
        'native',
        IMAGE,
        'image-default',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    running.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no banner: ${out}`)), 60_000);
      const check = (): void => {
        if (/listening on https:\/\/0\.0\.0\.0:8443 \(every interface\)/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', check);
      child.once('exit', () => reject(new Error(`exited: ${out}`)));
    });
    expect(out).toMatch(/--cacert \/tmp\/webhook-certs\/ca\.crt/);
    // A client inside the container, as the banner tells a user to call it.
    const probe = [
      "const https = require('node:https'); const fs = require('node:fs');",
      "const body = fs.readFileSync('/app/docs/admission/pod-create-smcr.json');",
      "const req = https.request({ host: '127.0.0.1', port: 8443, path: '/mutate', method: 'POST', ca: fs.readFileSync('/tmp/webhook-certs/ca.crt'),",
      "  servername: 'erdma-smcr-webhook.erdma-smcr.svc', headers: { 'content-type': 'application/json' } },",
      '  (res) => { let d = ""; res.on("data", (c) => (d += c)); res.on("end", () => process.stdout.write(String(JSON.parse(d).response.allowed))); });',
      'req.end(body);',
    ].join('\n');
    const answer = containerd!.ctr([
      'task',
      'exec',
      '--exec-id',
      'probe',
      'image-default',
      'node',
      '-e',
      probe,
    ]);
    expect(answer).toBe('true');
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', resolve);
      containerd!.ctr(['task', 'kill', '-s', 'SIGTERM', 'image-default']);
    });
    expect(code, out).toBe(0);
  });
});
