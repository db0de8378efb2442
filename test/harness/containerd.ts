// containerd 2 (built from the Go module proxy by test/harness/k8s/build.sh, with its runc shim and
// ctr) and Debian's runc, started by a test with their own root, state, socket, CNI dirs and CDI
// spec dirs, inside a network namespace the test created (entered with nsenter --net, not ip netns
// exec, which would remount /sys). Images are single-layer OCI archives built from busybox-static
// and imported with ctr (no registry is reachable here). A CRI client over gRPC on the unix socket
// speaks runtime.v1 (test/harness/cri/api.proto).
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { binPath } from './k8s/control-plane.js';

/** containerd's binaries (containerd, ctr, containerd-shim-runc-v2), from the harness cache. */
export const CONTAINERD_BIN = dirname(binPath('containerd'));

export function containerdAvailable(): string {
  for (const bin of ['containerd', 'ctr', 'containerd-shim-runc-v2'])
    if (!existsSync(join(CONTAINERD_BIN, bin)))
      return `${join(CONTAINERD_BIN, bin)} missing (run test/harness/k8s/build.sh containerd)`;
  for (const bin of ['/usr/sbin/runc', '/bin/busybox']) {
    if (!existsSync(bin) && !existsSync(bin.replace('/usr/sbin/', '/usr/bin/')))
      return `${bin} missing (apt-get install runc busybox-static)`;
  }
  return process.getuid?.() === 0 ? '' : 'needs root';
}

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/**
 * An OCI image archive (oci-layout + index.json + blobs) with one layer holding busybox-static,
 * named by the io.containerd.image.name annotation. Built with the system tar.
 */
export function buildBusyboxImage(name: string, out: string, cmd: readonly string[]): void {
  const work = mkdtempSync(join(tmpdir(), 'oci-'));
  try {
    const rootfs = join(work, 'rootfs');
    mkdirSync(join(rootfs, 'bin'), { recursive: true });
    for (const d of ['proc', 'sys', 'dev', 'etc', 'tmp']) mkdirSync(join(rootfs, d));
    execFileSync('cp', ['/bin/busybox', join(rootfs, 'bin/busybox')]);
    for (const applet of ['sh', 'sleep', 'cat', 'ls', 'env', 'ip'])
      symlinkSync('busybox', join(rootfs, 'bin', applet));
    const layer = execFileSync(
      'tar',
      [
        '--sort=name',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        '--mtime=@0',
        '-C',
        rootfs,
        '-cf',
        '-',
        '.',
      ],
      { maxBuffer: 64 << 20 },
    );
    const config = Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: { Cmd: cmd, Env: ['PATH=/bin'] },
        rootfs: { type: 'layers', diff_ids: [`sha256:${sha(layer)}`] },
      }),
    );
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: {
          mediaType: 'application/vnd.oci.image.config.v1+json',
          digest: `sha256:${sha(config)}`,
          size: config.length,
        },
        layers: [
          {
            mediaType: 'application/vnd.oci.image.layer.v1.tar',
            digest: `sha256:${sha(layer)}`,
            size: layer.length,
          },
        ],
      }),
    );
    const dir = join(work, 'image');
    mkdirSync(join(dir, 'blobs/sha256'), { recursive: true });
    for (const blob of [layer, config, manifest])
      writeFileSync(join(dir, 'blobs/sha256', sha(blob)), blob);
    writeFileSync(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(
      join(dir, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        manifests: [
          {
            mediaType: 'application/vnd.oci.image.manifest.v1+json',
            digest: `sha256:${sha(manifest)}`,
            size: manifest.length,
            annotations: {
              'io.containerd.image.name': name,
              'org.opencontainers.image.ref.name': name.split(':').pop(),
            },
          },
        ],
      }),
    );
    execFileSync('tar', ['-C', dir, '-cf', out, '.']);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export interface CniSetup {
  /** The conflist containerd loads (written as 10-test.conflist). */
  readonly conflist: object;
  /** Plugin binaries: name → path (symlinked into the CNI bin dir). */
  readonly plugins: Readonly<Record<string, string>>;
}

export interface Containerd {
  readonly dir: string;
  readonly socket: string;
  readonly cniConfDir: string;
  /** Where containerd reads CDI specs. */
  readonly cdiSpecDirs: readonly string[];
  readonly cri: grpc.Client & Record<string, (...args: unknown[]) => unknown>;
  /** Calls a CRI RuntimeService method. */
  call<T>(method: string, req: object, timeoutMs?: number): Promise<T>;
  ctr(args: readonly string[]): string;
  logs(): string;
  stop(): Promise<void>;
}

export interface ContainerdOptions {
  /** nsenter arguments placing containerd (and so the CNI host side), e.g. ['--net=/run/netns/x']. */
  readonly enter: readonly string[];
  /** A conflist and plugins for a CNI dir of containerd's own, or existing dirs to use as they are. */
  readonly cni: CniSetup | { readonly confDir: string; readonly binDir: string };
  readonly sandboxImage: string;
  /** OCI archives to import into the k8s.io namespace. */
  readonly images: readonly string[];
  /** Where containerd reads CDI specs (default: a dir of its own, `<dir>/cdi`). */
  readonly cdiSpecDirs?: readonly string[];
}

function loadCri(): grpc.ServiceClientConstructor {
  const def = protoLoader.loadSync(fileURLToPath(new URL('cri/api.proto', import.meta.url)), {
    keepCase: true,
    longs: Number,
    defaults: true,
    enums: String,
  });
  return (
    grpc.loadPackageDefinition(def).runtime as {
      v1: { RuntimeService: grpc.ServiceClientConstructor };
    }
  ).v1.RuntimeService;
}

/** PIDs of containerd-shim processes whose arguments include `dir` (read from /proc). */
function shimPids(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.includes('containerd-shim') && argv.some((a) => a.includes(dir)))
        pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

export async function startContainerd(opts: ContainerdOptions): Promise<Containerd> {
  const dir = mkdtempSync(join(tmpdir(), 'containerd-'));
  const socket = join(dir, 'containerd.sock');
  const cniConfDir = 'confDir' in opts.cni ? opts.cni.confDir : join(dir, 'cni-conf');
  const cniBinDir = 'binDir' in opts.cni ? opts.cni.binDir : join(dir, 'cni-bin');
  if ('conflist' in opts.cni) {
    mkdirSync(cniConfDir);
    mkdirSync(cniBinDir);
    for (const [n, p] of Object.entries(opts.cni.plugins)) symlinkSync(p, join(cniBinDir, n));
    writeFileSync(join(cniConfDir, '10-test.conflist'), JSON.stringify(opts.cni.conflist, null, 2));
  }

  const cdiSpecDirs = opts.cdiSpecDirs ?? [join(dir, 'cdi')];
  // containerd 2's configuration version 3: the CRI plugin split into images and runtime parts.
  // CDI is always on in containerd 2 (enable_cdi went away); its spec dirs are ours.
  writeFileSync(
    join(dir, 'config.toml'),
    [
      'version = 3',
      `root = "${dir}/root"`,
      `state = "${dir}/state"`,
      'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing", "io.containerd.nri.v1.nri"]',
      '[grpc]',
      `  address = "${socket}"`,
      '[ttrpc]',
      `  address = "${socket}.ttrpc"`,
      '[plugins."io.containerd.internal.v1.opt"]',
      `  path = "${dir}/opt"`,
      '[plugins."io.containerd.cri.v1.images"]',
      // The native snapshotter works on any filesystem (overlay-on-overlay does not).
      '  snapshotter = "native"',
      '  [plugins."io.containerd.cri.v1.images".pinned_images]',
      `    sandbox = "${opts.sandboxImage}"`,
      // ctr's image import goes through the transfer service, which unpacks only for the
      // platforms and snapshotters listed here (its default is overlayfs').
      '[plugins."io.containerd.transfer.v1.local"]',
      '  [[plugins."io.containerd.transfer.v1.local".unpack_config]]',
      '    platform = "linux/amd64"',
      '    snapshotter = "native"',
      '[plugins."io.containerd.cri.v1.runtime"]',
      // Without it containerd refuses to lower its own oom_score_adj in this environment.
      '  restrict_oom_score_adj = true',
      `  cdi_spec_dirs = [${cdiSpecDirs.map((d) => JSON.stringify(d)).join(', ')}]`,
      '  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]',
      '    runtime_type = "io.containerd.runc.v2"',
      '    snapshotter = "native"',
      '  [plugins."io.containerd.cri.v1.runtime".cni]',
      `    bin_dirs = ["${cniBinDir}"]`,
      `    conf_dir = "${cniConfDir}"`,
      '',
    ].join('\n'),
  );
  let logs = '';
  const child: ChildProcess = spawn(
    'nsenter',
    [
      ...opts.enter,
      join(CONTAINERD_BIN, 'containerd'),
      '--config',
      join(dir, 'config.toml'),
      '--log-level',
      'info',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      // The runc shim is looked up on PATH.
      env: { ...process.env, PATH: `${CONTAINERD_BIN}:${process.env.PATH ?? ''}` },
    },
  );
  child.stdout?.on('data', (d: Buffer) => (logs += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (logs += d.toString()));
  const ctr = (args: readonly string[]): string =>
    execFileSync(
      join(CONTAINERD_BIN, 'ctr'),
      ['--address', socket, '--namespace', 'k8s.io', ...args],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
  const RuntimeService = loadCri();
  const cri = new RuntimeService(
    `unix://${socket}`,
    grpc.credentials.createInsecure(),
  ) as Containerd['cri'];
  const call = <T>(method: string, req: object, timeoutMs = 60_000): Promise<T> =>
    new Promise((resolve, reject) => {
      (
        cri[method] as (
          r: object,
          o: object,
          cb: (e: grpc.ServiceError | null, v: T) => void,
        ) => void
      )(req, { deadline: Date.now() + timeoutMs }, (e, v) =>
        e ? reject(new Error(`${method}: ${e.details || e.message}`)) : resolve(v),
      );
    });
  const stop = async (): Promise<void> => {
    cri.close();
    if (child.exitCode === null) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        child.kill('SIGTERM');
      });
    }
    // Shim processes and mounts containerd may leave behind when a test fails midway: only the
    // shims whose command line names this containerd's own directory, by PID (never a pattern
    // match over the machine's processes, which could reach another containerd).
    for (const pid of shimPids(dir)) spawnSync('kill', ['-KILL', String(pid)]);
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .filter((m) => m.startsWith(dir))
      .sort((a, b) => b.length - a.length);
    for (const m of mounts) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`containerd exited: ${logs.slice(-3000)}`);
      if (existsSync(socket)) {
        try {
          await call('Version', { version: 'v1' }, 2000);
          break;
        } catch {
          // CRI plugin not up yet
        }
      }
      if (Date.now() > deadline)
        throw new Error(`containerd did not come up: ${logs.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    for (const image of opts.images) ctr(['images', 'import', '--snapshotter', 'native', image]);
    return { dir, socket, cniConfDir, cdiSpecDirs, cri, call, ctr, logs: () => logs, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Network namespaces containerd created (cni-*) that still exist. */
export function cniNetns(): string[] {
  return existsSync('/var/run/netns')
    ? readdirSync('/var/run/netns').filter((n) => n.startsWith('cni-'))
    : [];
}
