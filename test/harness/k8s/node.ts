// A real Kubernetes node for tests: kubelet 1.37 (built with the control plane, unpatched) and
// containerd 2 (CDI on), in the network namespace of the control plane (node IP on a veth kept
// inside it) and a private mount namespace, so the node changes nothing on the host: tmpfs on /run
// (so /var/run/cdi is the node's own), an overlay on /var/lib (the kubelet hardcodes
// /var/lib/kubelet/device-plugins), a bind on /var/log, and files with kubelet's wanted values
// bound over the three /proc/sys knobs it would otherwise write. The host paths the node agent
// shares with the runtime (CNI state, PNETID file, CNI log) are bound from the agent's host root,
// as the DaemonSet's hostPath mounts do. The only host footprint is a cgroup subtree.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { startContainerd, type Containerd } from '../containerd.js';
import { binPath, type ControlPlane } from './control-plane.js';
import { clientCert } from './pki.js';

export const CGROUP_HIERARCHIES = [
  'cpu',
  'cpuacct',
  'cpuset',
  'memory',
  'devices',
  'freezer',
  'blkio',
  'pids',
  'systemd',
  'unified',
];

export interface NodeOptions {
  readonly cp: ControlPlane;
  readonly name: string;
  /** The node's IP, on a veth the harness creates inside the control plane's netns. */
  readonly ip: string;
  readonly dir: string;
  /** The agent's host root: its etc/cni/net.d and opt/cni/bin are the runtime's CNI dirs. */
  readonly hostRoot: string;
  readonly sandboxImage: string;
  readonly images: readonly string[];
}

export interface KubeNode {
  /** nsenter arguments that enter the node (network and mount namespaces). */
  readonly enter: readonly string[];
  readonly containerd: Containerd;
  readonly cgroupRoot: string;
  /** Runs a program inside the node's namespaces (the agent, for one). */
  spawnInNode(
    cmd: string,
    args: readonly string[],
    logName: string,
    env?: Record<string, string>,
  ): ChildProcess;
  /** Runs a command inside the node and returns its output. */
  exec(cmd: string, args: readonly string[]): string;
  startKubelet(): void;
  stopKubelet(): Promise<void>;
  logs(name: string): string;
  stop(): Promise<void>;
}

async function stopChild(
  child: ChildProcess | undefined,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill(signal);
  });
}

/** Kills every process left in the cgroup subtree, then removes it bottom-up, in every hierarchy. */
function removeCgroups(root: string): void {
  for (const h of CGROUP_HIERARCHIES) {
    const top = join('/sys/fs/cgroup', h, root);
    if (!existsSync(top)) continue;
    const dirs: string[] = [];
    const walk = (d: string): void => {
      dirs.push(d);
      for (const e of readdirSync(d, { withFileTypes: true }))
        if (e.isDirectory()) walk(join(d, e.name));
    };
    walk(top);
    for (const d of dirs) {
      for (const pid of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean))
        spawnSync('kill', ['-KILL', pid]);
    }
    for (const d of dirs.reverse()) {
      for (let i = 0; i < 20; i++) {
        try {
          rmdirSync(d);
          break;
        } catch {
          spawnSync('sleep', ['0.1']);
        }
      }
    }
  }
}

function mountSetup(dir: string, hostRoot: string): string {
  const binds = ['var/lib/cni/erdma-smcr', 'run/erdma-smcr', 'var/log/erdma-smcr'];
  return [
    'set -e',
    // /run/netns a shared mount inside the node's own mount namespace, as `ip netns` and systemd
    // leave it on a real host: the agent mounts it HostToContainer, which needs a shared source.
    // (The machine's own /run/netns mount, copied into this namespace, goes first: the runtime would
    // find it, private, under the new one.)
    '(umount -l /run/netns 2>/dev/null || true) && mount -t tmpfs tmpfs /run && mkdir -p /run/netns && mount --bind /run/netns /run/netns && mount --make-shared /run/netns',
    `mkdir -p ${dir}/ovl && mount -t tmpfs tmpfs ${dir}/ovl && mkdir -p ${dir}/ovl/upper ${dir}/ovl/work`,
    `mount -t overlay overlay -o lowerdir=/var/lib,upperdir=${dir}/ovl/upper,workdir=${dir}/ovl/work /var/lib`,
    `mkdir -p ${dir}/log && mount --bind ${dir}/log /var/log`,
    // kubelet wants these values; it finds them and writes nothing to the host's /proc/sys.
    `echo 1 > ${dir}/overcommit_memory && mount --bind ${dir}/overcommit_memory /proc/sys/vm/overcommit_memory`,
    `echo 10 > ${dir}/panic && mount --bind ${dir}/panic /proc/sys/kernel/panic`,
    `echo 1 > ${dir}/panic_on_oops && mount --bind ${dir}/panic_on_oops /proc/sys/kernel/panic_on_oops`,
    ...binds.map((b) => `mkdir -p ${hostRoot}/${b} /${b} && mount --bind ${hostRoot}/${b} /${b}`),
    'echo ready',
    'exec sleep 2147483647',
  ].join('\n');
}

export async function startNode(o: NodeOptions): Promise<KubeNode> {
  const { cp, dir, name } = o;
  const netns = cp.netns;
  if (!netns) throw new Error('the node needs a control plane started in a network namespace');
  mkdirSync(dir, { recursive: true });
  // The node IP: a veth pair kept inside the netns (this kernel has no dummy module; kubelet refuses loopback).
  const ip = (...args: string[]): void => {
    execFileSync('nsenter', [`--net=${netns}`, 'ip', ...args]);
  };
  ip('link', 'add', 'node0', 'type', 'veth', 'peer', 'name', 'node0-peer');
  ip('addr', 'add', `${o.ip}/24`, 'dev', 'node0');
  ip('link', 'set', 'node0', 'up');
  ip('link', 'set', 'node0-peer', 'up');
  ip('route', 'add', 'default', 'dev', 'node0');

  const holder = spawn(
    'nsenter',
    [
      `--net=${netns}`,
      'unshare',
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      mountSetup(dir, o.hostRoot),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let holderOut = '';
  await new Promise<void>((resolve, reject) => {
    holder.stdout?.on('data', (d: Buffer) => {
      holderOut += d.toString();
      if (holderOut.includes('ready')) resolve();
    });
    holder.stderr?.on('data', (d: Buffer) => (holderOut += d.toString()));
    holder.once('exit', (code) =>
      reject(new Error(`node mount namespace setup failed (${code}): ${holderOut}`)),
    );
  });
  const enter = ['--target', String(holder.pid), '--mount', '--net'];
  const cgroupRoot = `/erdma-smcr-node-${process.pid}`;
  const children: ChildProcess[] = [];
  let kubelet: ChildProcess | undefined;
  let containerd: Containerd | undefined;

  const spawnInNode = (
    cmd: string,
    args: readonly string[],
    logName: string,
    env: Record<string, string> = {},
  ): ChildProcess => {
    const log = openSync(join(dir, `${logName}.log`), 'a');
    const child = spawn('nsenter', [...enter, cmd, ...args], {
      stdio: ['ignore', log, log],
      env: { PATH: process.env.PATH ?? '', HOME: dir, ...env },
    });
    children.push(child);
    return child;
  };
  const exec = (cmd: string, args: readonly string[]): string =>
    execFileSync('nsenter', [...enter, cmd, ...args], { encoding: 'utf8' });

  // Kubelet's identity and configuration.
  const ca = {
    certPem: readFileSync(join(cp.dir, 'ca.crt'), 'utf8'),
    keyPem: readFileSync(join(cp.dir, 'ca.key'), 'utf8'),
  };
  const id = clientCert(ca, `system:node:${name}`, ['system:nodes']);
  writeFileSync(join(dir, 'kubelet.crt'), id.certPem);
  writeFileSync(join(dir, 'kubelet.key'), id.keyPem, { mode: 0o600 });
  writeFileSync(
    join(dir, 'kubelet.kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters:\n- name: test\n  cluster:\n    server: ${cp.url}\n    certificate-authority: ${join(cp.dir, 'ca.crt')}`,
      `users:\n- name: kubelet\n  user:\n    client-certificate: ${join(dir, 'kubelet.crt')}\n    client-key: ${join(dir, 'kubelet.key')}`,
      'contexts:\n- name: test\n  context:\n    cluster: test\n    user: kubelet',
      'current-context: test',
      '',
    ].join('\n'),
  );
  // Written when the kubelet starts: it names containerd's socket.
  const writeKubeletConfig = (containerdSocket: string): void =>
    writeFileSync(
      join(dir, 'kubelet.yaml'),
      JSON.stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        address: o.ip,
        port: 10250,
        readOnlyPort: 0,
        healthzBindAddress: '127.0.0.1',
        healthzPort: 10248,
        authentication: {
          anonymous: { enabled: false },
          webhook: { enabled: true },
          x509: { clientCAFile: join(cp.dir, 'ca.crt') },
        },
        authorization: { mode: 'Webhook' },
        cgroupDriver: 'cgroupfs',
        cgroupRoot,
        // This machine mounts cgroup v1; from 1.35 the kubelet refuses it unless told (a real node
        // runs cgroup v2, where the default, true, is right).
        failCgroupV1: false,
        containerRuntimeEndpoint: `unix://${containerdSocket}`,
        failSwapOn: false,
        makeIPTablesUtilChains: false,
        volumePluginDir: join(dir, 'volume-plugins'),
        evictionHard: {
          'memory.available': '1Mi',
          'nodefs.available': '1%',
          'imagefs.available': '1%',
        },
        imageGCHighThresholdPercent: 100,
        imageGCLowThresholdPercent: 99,
        resolvConf: '',
        serializeImagePulls: false,
        syncFrequency: '5s',
        nodeStatusUpdateFrequency: '2s',
        fileCheckFrequency: '5s',
      }),
    );

  // kubelet requires its cgroupRoot to exist in every hierarchy.
  for (const h of CGROUP_HIERARCHIES)
    if (existsSync(join('/sys/fs/cgroup', h)))
      mkdirSync(join('/sys/fs/cgroup', h, cgroupRoot), { recursive: true });

  const startKubelet = (): void => {
    writeKubeletConfig((containerd as Containerd).socket);
    kubelet = spawnInNode(
      binPath('kubelet'),
      [
        `--config=${join(dir, 'kubelet.yaml')}`,
        `--kubeconfig=${join(dir, 'kubelet.kubeconfig')}`,
        `--cert-dir=${join(dir, 'kubelet-pki')}`,
        `--node-ip=${o.ip}`,
        `--hostname-override=${name}`,
        '--v=1',
      ],
      'kubelet',
      // Skips about 6 s of cloud metadata probing at start.
      { AWS_EC2_METADATA_DISABLED: 'true' },
    );
  };
  const stopKubelet = async (): Promise<void> => stopChild(kubelet);

  const stop = async (): Promise<void> => {
    for (const c of [...children].reverse()) await stopChild(c);
    await containerd?.stop();
    removeCgroups(cgroupRoot);
    await stopChild(holder, 'SIGKILL');
  };

  try {
    containerd = await startContainerd({
      enter,
      sandboxImage: o.sandboxImage,
      images: o.images,
      cni: { confDir: join(o.hostRoot, 'etc/cni/net.d'), binDir: join(o.hostRoot, 'opt/cni/bin') },
    });
    startKubelet();
    return {
      enter,
      containerd,
      cgroupRoot,
      spawnInNode,
      exec,
      startKubelet,
      stopKubelet,
      logs: (n) =>
        existsSync(join(dir, `${n}.log`)) ? readFileSync(join(dir, `${n}.log`), 'utf8') : '',
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
