// A real Kubernetes control plane for tests: etcd and kube-apiserver (and, when asked,
// kube-controller-manager and kube-scheduler), Kubernetes 1.37 (or the API server and kubectl of
// 1.35) built from the Go module proxy by build.sh, with 1.37's default feature gates, on free
// loopback ports in a temp dir, with a PKI made here. Everything is stopped and removed by stop().
//
// Webhooks registered with `clientConfig.service` are reached through the Service's ClusterIP:
// the service CIDR is a loopback range (127.100.0.0/24), so the API server dials our webhook on
// loopback and still verifies its certificate for <service>.<namespace>.svc. (Endpoints cannot
// point at loopback: the API refuses such addresses.)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateCA, generateServingCert } from '../../../src/certs/pki.js';
import { clientCert } from './pki.js';
import { generateKeyPairSync, randomBytes } from 'node:crypto';

/** Where test/harness/k8s/build.sh caches what it builds. */
export const CACHE = process.env.ERDMA_SMCR_CACHE ?? '/var/cache/erdma-smcr';

/** The Kubernetes minors the harness builds: the newest, and the oldest ACK and upstream support. */
export type KubeMinor = '1.37' | '1.35';
export const NEWEST: KubeMinor = '1.37';

/** Kubernetes 1.37's binaries (build.sh links k8s-1.37 to k8s-v1.37.y). */
export const K8S_BIN = join(CACHE, `k8s-${NEWEST}`, 'bin');
export const SERVICE_CIDR = '127.100.0.0/24';

/** Where one binary of the harness is: Kubernetes' by minor, etcd's, containerd's and helm's by name. */
export function binPath(name: string, minor: KubeMinor = NEWEST): string {
  if (name === 'etcd') return join(CACHE, 'etcd', 'bin', 'etcd');
  if (name === 'helm') return join(CACHE, 'helm', 'bin', 'helm');
  if (name.startsWith('containerd')) return join(CACHE, 'containerd', 'bin', name);
  return join(CACHE, `k8s-${minor}`, 'bin', name);
}

/** kubectl 1.37 (with its built-in kustomize) from the harness cache. */
export const KUBECTL = binPath('kubectl');

/** '' when the cached kubectl is there, else why not (test/helpers/requires.ts turns that into a skip or, in CI, a failure). */
export function kubectlMissing(): string {
  return existsSync(KUBECTL) ? '' : `no kubectl at ${KUBECTL} (run test/harness/k8s/build.sh)`;
}

export function binariesPresent(
  names: readonly string[] = ['etcd', 'kube-apiserver', 'kubectl'],
  minor: KubeMinor = NEWEST,
): string[] {
  return names.filter((n) => !existsSync(binPath(n, minor)));
}

/** Builds (or finds cached) binaries; returns '' or why they are not there. Slow only the first time. */
export function ensureBinaries(): string {
  const all = [
    'etcd',
    'kube-apiserver',
    'kube-controller-manager',
    'kube-scheduler',
    'kubelet',
    'kubectl',
    'helm',
  ];
  if (binariesPresent(all).length === 0) return '';
  const build = spawnSync('bash', ['test/harness/k8s/build.sh'], {
    stdio: 'inherit',
    timeout: 60 * 60_000,
  });
  if (build.status !== 0)
    return 'building Kubernetes from the Go module proxy failed (see the log above)';
  const missing = binariesPresent(all);
  return missing.length ? `missing after build: ${missing.join(', ')}` : '';
}

/** Ports freePort has handed out in this process. */
const issued = new Set<number>();

/** A loopback port the kernel calls free in this process's network namespace. */
function probePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * A loopback port for a component, never one handed out before in this process. The probe runs in
 * our own network namespace, while a control plane in a test netns listens in that one: there a
 * port given to the API server is still free here, and the kernel can offer it again (the
 * scheduler once got the API server's port and died on "address already in use").
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await probePort();
    if (issued.has(port)) continue;
    issued.add(port);
    return port;
  }
}

export interface KubectlResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl (in network namespace `netns` when given, where that control plane listens). */
export function runKubectl(
  kubeconfig: string,
  args: readonly string[],
  input?: string,
  netns?: string,
  minor: KubeMinor = NEWEST,
): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const argv = ['--kubeconfig', kubeconfig, ...args];
    const kubectl = binPath('kubectl', minor);
    const child = netns
      ? spawn('nsenter', [`--net=${netns}`, kubectl, ...argv], { stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(kubectl, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ status: code ?? -1, stdout, stderr });
    });
    child.stdin.end(input ?? '');
  });
}

export interface ControlPlane {
  readonly dir: string;
  readonly url: string;
  readonly caPem: string;
  readonly token: string;
  readonly kubeconfig: string;
  /** The network namespace everything listens in ('' for the host's loopback). */
  readonly netns: string;
  /** etcd's client URL (plain HTTP on loopback; its v3 JSON gateway included). */
  readonly etcdUrl: string;
  /**
   * A kubeconfig holding a real token of ServiceAccount `namespace/name` (TokenRequest API, so
   * the API server's ServiceAccount authenticator validates it): RBAC applies as in a pod. With
   * `boundPod` (a Pod of that namespace), the token is bound to it as the kubelet's projected
   * token is, and names the pod's node (userInfo.extra node-name: the API server's
   * `associated-node:` checks read it).
   */
  kubeconfigFor(namespace: string, name: string, boundPod?: string): Promise<string>;
  /** The API server's (and kubectl's) Kubernetes minor. */
  readonly minor: KubeMinor;
  /** Runs kubectl of the same minor against this control plane (asynchronously: webhooks in this process keep serving). */
  kubectl(args: readonly string[], input?: string): Promise<KubectlResult>;
  /** The process ID of a running component (etcd, kube-apiserver, kube-scheduler, ...). */
  pid(component: string): number | undefined;
  stop(): Promise<void>;
}

/** A control-plane component exited while the control plane was in use. */
export class ControlPlaneDied extends Error {
  constructor(name: string, code: number | string, dir: string) {
    const log = join(dir, `${name}.log`);
    let tail = '';
    try {
      tail = readFileSync(log, 'utf8').split('\n').slice(-40).join('\n');
    } catch {
      // no log written
    }
    super(`${name} exited (${code}) while the control plane was in use; ${log}:\n${tail}`);
    this.name = 'ControlPlaneDied';
  }
}

interface Proc {
  name: string;
  child: ChildProcess;
}

function startProc(
  dir: string,
  name: string,
  args: string[],
  netns?: string,
  minor: KubeMinor = NEWEST,
): Proc {
  const log = openSync(join(dir, `${name}.log`), 'a');
  const env = { PATH: process.env.PATH ?? '' };
  const child = netns
    ? spawn('nsenter', [`--net=${netns}`, binPath(name, minor), ...args], {
        stdio: ['ignore', log, log],
        env,
      })
    : spawn(binPath(name, minor), args, { stdio: ['ignore', log, log], env });
  return { name, child };
}

async function stopProc(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
    p.child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    p.child.kill('SIGTERM');
  });
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  procs: Proc[],
  dir: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const dead = procs.find((p) => p.child.exitCode !== null);
    if (dead)
      throw new Error(
        `${dead.name} exited with ${dead.child.exitCode}; see ${join(dir, `${dead.name}.log`)}`,
      );
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}; logs in ${dir}`);
}

function writePki(
  dir: string,
  extraNames: readonly string[] = [],
): { caPem: string; token: string } {
  const ca = generateCA('erdma-smcr-test-cluster-ca', { validityDays: 2 });
  const names = [
    'localhost',
    '127.0.0.1',
    'kubernetes',
    'kubernetes.default',
    'kubernetes.default.svc',
    '127.100.0.1',
    ...extraNames,
  ];
  const serving = generateServingCert(ca, names, { validityDays: 2 });
  writeFileSync(join(dir, 'ca.crt'), ca.certPem);
  writeFileSync(join(dir, 'ca.key'), ca.keyPem, { mode: 0o600 });
  // The API server's identity towards kubelets (logs, exec).
  const kc = clientCert(ca, 'kube-apiserver-kubelet-client', ['system:masters']);
  writeFileSync(join(dir, 'kubelet-client.crt'), kc.certPem);
  writeFileSync(join(dir, 'kubelet-client.key'), kc.keyPem, { mode: 0o600 });
  writeFileSync(join(dir, 'apiserver.crt'), serving.certPem);
  writeFileSync(join(dir, 'apiserver.key'), serving.keyPem, { mode: 0o600 });
  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(join(dir, 'sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  writeFileSync(join(dir, 'sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));
  const token = randomBytes(24).toString('hex');
  writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin-uid,"system:masters"\n`, {
    mode: 0o600,
  });
  return { caPem: ca.certPem, token };
}

function kubeconfigYaml(url: string, caPem: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: test\n  cluster:\n    server: ${url}\n    certificate-authority-data: ${Buffer.from(caPem).toString('base64')}`,
    'users:',
    `- name: admin\n  user:\n    token: ${token}`,
    'contexts:',
    '- name: test\n  context:\n    cluster: test\n    user: admin',
    'current-context: test',
    '',
  ].join('\n');
}

export interface ControlPlaneOptions {
  /** Also run kube-controller-manager (Deployments create pods). */
  readonly controllerManager?: boolean;
  /** Also run kube-scheduler. */
  readonly scheduler?: boolean;
  /** Run everything inside this network namespace (path), e.g. with a kubelet on a veth there. */
  readonly netns?: string;
  /**
   * A cluster whose pods talk to the API server as in a real one (our manifests running as
   * pods): Services from `serviceCidr` (routed by kube-proxy, inside the test netns), the API
   * server reachable on `nodeIp` and advertised there (the `kubernetes` Service's endpoint, kept
   * by the lease reconciler), ServiceAccount admission and the controllers behind tokens and
   * Endpoints; and the Job controller (the in-cluster suite's outage step runs an annotated Job).
   */
  readonly inClusterPods?: { readonly nodeIp: string; readonly serviceCidr: string };
  /** The Service CIDR when the pods are not in the cluster (default: the loopback SERVICE_CIDR). */
  readonly serviceCidr?: string;
  /** The API server's and kubectl's minor (default 1.37; 1.35 builds only those two). */
  readonly minor?: KubeMinor;
  /** More kube-apiserver flags (e.g. `--watch-cache-sizes` to send one resource's watches to etcd). */
  readonly apiserverArgs?: readonly string[];
}

/** The first address of a /24 service range: the `kubernetes` Service's ClusterIP. */
export function firstServiceIp(cidr: string): string {
  return cidr.replace(/\.0\/\d+$/, '.1');
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), 'k8s-'));
  const minor = opts.minor ?? NEWEST;
  const procs: Proc[] = [];
  // A component that dies after start (a port clash killed the scheduler once, and a run hung
  // with every pod Pending) fails every later call at once, with its log.
  let died: ControlPlaneDied | undefined;
  let stopping = false;
  const watch = (p: Proc): Proc => {
    p.child.once('exit', (code, signal) => {
      if (!stopping) died ??= new ControlPlaneDied(p.name, code ?? signal ?? '?', dir);
    });
    return p;
  };
  const stop = async (): Promise<void> => {
    stopping = true;
    for (const p of [...procs].reverse()) await stopProc(p);
    if (!process.env.ERDMA_SMCR_KEEP_K8S) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const pods = opts.inClusterPods;
    const { caPem, token } = writePki(
      dir,
      pods ? [pods.nodeIp, firstServiceIp(pods.serviceCidr)] : [],
    );
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    procs.push(
      watch(
        startProc(
          dir,
          'etcd',
          [
            `--data-dir=${join(dir, 'etcd')}`,
            `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
            `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
            `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
            `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
            `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
            '--log-level=warn',
          ],
          opts.netns,
        ),
      ),
    );
    const url = `https://127.0.0.1:${apiPort}`;
    procs.push(
      watch(
        startProc(
          dir,
          'kube-apiserver',
          [
            `--etcd-servers=http://127.0.0.1:${etcdPort}`,
            ...(pods
              ? [
                  '--bind-address=0.0.0.0',
                  `--advertise-address=${pods.nodeIp}`,
                  '--endpoint-reconciler-type=lease',
                ]
              : [
                  '--bind-address=127.0.0.1',
                  '--advertise-address=127.0.0.1',
                  '--endpoint-reconciler-type=none',
                ]),
            `--secure-port=${apiPort}`,
            `--tls-cert-file=${join(dir, 'apiserver.crt')}`,
            `--tls-private-key-file=${join(dir, 'apiserver.key')}`,
            `--client-ca-file=${join(dir, 'ca.crt')}`,
            `--token-auth-file=${join(dir, 'tokens.csv')}`,
            '--authorization-mode=Node,RBAC',
            `--service-account-key-file=${join(dir, 'sa.pub')}`,
            `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
            '--service-account-issuer=https://kubernetes.default.svc',
            `--service-cluster-ip-range=${pods?.serviceCidr ?? opts.serviceCidr ?? SERVICE_CIDR}`,
            // Pods in tests carry no API tokens unless they run our manifests (the token controller is not always running).
            ...(pods ? [] : ['--disable-admission-plugins=ServiceAccount']),
            '--allow-privileged=true',
            `--kubelet-client-certificate=${join(dir, 'kubelet-client.crt')}`,
            `--kubelet-client-key=${join(dir, 'kubelet-client.key')}`,
            '--kubelet-preferred-address-types=InternalIP',
            '--v=1',
            ...(opts.apiserverArgs ?? []),
          ],
          opts.netns,
          minor,
        ),
      ),
    );
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(url, caPem, token), { mode: 0o600 });
    const kubectl = (args: readonly string[], input?: string): Promise<KubectlResult> =>
      died ? Promise.reject(died) : runKubectl(kubeconfig, args, input, opts.netns, minor);
    await waitFor(
      'kube-apiserver /readyz',
      async () => (await kubectl(['get', '--raw', '/readyz'])).status === 0,
      60_000,
      procs,
      dir,
    );
    if (opts.controllerManager || opts.scheduler) {
      // /readyz can pass before RBAC is bootstrapped: wait until a controller identity can read configmaps.
      const canRead = async (): Promise<boolean> =>
        (
          await kubectl([
            'auth',
            'can-i',
            'get',
            'configmaps',
            '-n',
            'kube-system',
            '--as',
            'system:kube-controller-manager',
          ])
        ).stdout.trim() === 'yes';
      await waitFor('RBAC bootstrap', canRead, 60_000, procs, dir);
    }
    if (opts.scheduler) {
      procs.push(
        watch(
          startProc(
            dir,
            'kube-scheduler',
            [
              `--kubeconfig=${kubeconfig}`,
              '--bind-address=127.0.0.1',
              `--secure-port=${await freePort()}`,
              '--leader-elect=false',
              '--v=1',
            ],
            opts.netns,
          ),
        ),
      );
    }
    if (opts.controllerManager) {
      const cmPort = await freePort();
      procs.push(
        watch(
          startProc(
            dir,
            'kube-controller-manager',
            [
              `--kubeconfig=${kubeconfig}`,
              '--bind-address=127.0.0.1',
              `--secure-port=${cmPort}`,
              '--leader-elect=false',
              '--use-service-account-credentials=false',
              `--service-account-private-key-file=${join(dir, 'sa.key')}`,
              `--root-ca-file=${join(dir, 'ca.crt')}`,
              `--controllers=deployment,replicaset,daemonset,serviceaccount-token,namespace,garbagecollector,nodelifecycle,resourceclaim-controller${pods ? ',serviceaccount,root-ca-cert-publisher,endpoint,endpointslice,job' : ''}`,
              '--v=1',
            ],
            opts.netns,
          ),
        ),
      );
    }
    const kubeconfigFor = async (
      namespace: string,
      name: string,
      boundPod?: string,
    ): Promise<string> => {
      const r = await kubectl(
        [
          'create',
          '--raw',
          `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
          '-f',
          '-',
        ],
        JSON.stringify({
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: {
            audiences: [],
            expirationSeconds: 3600,
            ...(boundPod
              ? { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: boundPod } }
              : {}),
          },
        }),
      );
      if (r.status !== 0) throw new Error(`TokenRequest for ${namespace}/${name}: ${r.stderr}`);
      const saToken = (JSON.parse(r.stdout) as { status: { token: string } }).status.token;
      const file = join(dir, `kubeconfig-${namespace}-${name}${boundPod ? `-${boundPod}` : ''}`);
      writeFileSync(file, kubeconfigYaml(url, caPem, saToken), { mode: 0o600 });
      return file;
    };
    return {
      dir,
      url,
      caPem,
      token,
      kubeconfig,
      netns: opts.netns ?? '',
      minor,
      etcdUrl: `http://127.0.0.1:${etcdPort}`,
      kubeconfigFor,
      kubectl,
      pid: (component) => procs.find((p) => p.name === component)?.child.pid,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
