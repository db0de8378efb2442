// A Service's rules as kube-proxy writes them: a real API server holds a Service and its
// EndpointSlice, a real kube-proxy (nftables mode, built by build.sh) programs them into a network
// namespace of ours, and we read back its table (`nft list table ip kube-proxy`). The VM suites load
// that table into the VM's node, where kube-proxy itself cannot run (the VM has no network to an
// API server): the DNAT a pod's SYN meets there is kube-proxy's own, not one written by hand.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { binariesPresent, K8S_BIN, startControlPlane } from './control-plane.js';
import { createNetns, deleteNetns } from '../../helpers/netns.js';

export interface ServiceSpec {
  /** The API server's Service CIDR, holding clusterIp. */
  readonly serviceCidr: string;
  readonly clusterIp: string;
  readonly ports: readonly number[];
  /** The one endpoint's address (a pod's IP), serving each port as is. */
  readonly endpointIp: string;
  /** The pods' CIDR (kube-proxy's --cluster-cidr: traffic from it is not masqueraded). */
  readonly podCidr: string;
}

export interface KubeProxyRules {
  /** `nft list table ip kube-proxy` once every port's DNAT to the endpoint is in it. */
  readonly table: string;
  /** kube-proxy's --version. */
  readonly version: string;
}

/** '' when etcd, kube-apiserver, kubectl and kube-proxy are built and nft is here, else why not. */
export function kubeProxyMissing(): string {
  const missing = binariesPresent(['etcd', 'kube-apiserver', 'kubectl', 'kube-proxy']);
  if (missing.length > 0) return `${missing.join(', ')} not built (run test/harness/k8s/build.sh)`;
  if (spawnSync('nft', ['--version'], { stdio: 'ignore' }).status !== 0)
    return 'no nft (Debian package nftables)';
  return '';
}

const NODE = 'vm-node';

export async function kubeProxyServiceRules(svc: ServiceSpec): Promise<KubeProxyRules> {
  const ns = createNetns('kproxy');
  const cp = await startControlPlane({ netns: ns.path, serviceCidr: svc.serviceCidr }).catch(
    (e: unknown) => {
      deleteNetns(ns.name);
      throw e;
    },
  );
  const log = join(cp.dir, 'kube-proxy.log');
  const fd = openSync(log, 'a');
  const proxy = spawn(
    'nsenter',
    [
      `--net=${ns.path}`,
      join(K8S_BIN, 'kube-proxy'),
      `--kubeconfig=${cp.kubeconfig}`,
      `--hostname-override=${NODE}`,
      '--proxy-mode=nftables',
      `--cluster-cidr=${svc.podCidr}`,
      // conntrack's sizing is the host's, not this namespace's.
      '--conntrack-max-per-core=0',
      '--healthz-bind-address=127.0.0.1:10256',
      '--metrics-bind-address=127.0.0.1:10249',
      '--v=2',
    ],
    { stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  try {
    const ports = svc.ports.map((p) => ({ name: `p${p}`, protocol: 'TCP', port: p }));
    const objects = [
      {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: NODE },
        spec: { podCIDR: svc.podCidr, podCIDRs: [svc.podCidr] },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'svc', namespace: 'default' },
        spec: {
          type: 'ClusterIP',
          clusterIP: svc.clusterIp,
          ports: ports.map((p) => ({ ...p, targetPort: p.port })),
        },
      },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: 'svc-pod-b',
          namespace: 'default',
          labels: { 'kubernetes.io/service-name': 'svc' },
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: [svc.endpointIp], conditions: { ready: true }, nodeName: NODE }],
        ports,
      },
    ];
    const applied = await cp.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
    );
    if (applied.status !== 0) throw new Error(`creating the Service failed: ${applied.stderr}`);
    const wanted = svc.ports.map((p) => `dnat to ${svc.endpointIp}:${p}`);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proxy.exitCode !== null)
        throw new Error(`kube-proxy exited (${proxy.exitCode}):\n${tail(log)}`);
      const listed = spawnSync(
        'ip',
        ['netns', 'exec', ns.name, 'nft', 'list', 'table', 'ip', 'kube-proxy'],
        {
          encoding: 'utf8',
        },
      );
      const table = listed.status === 0 ? listed.stdout : '';
      if (table.includes(svc.clusterIp) && wanted.every((w) => table.includes(w))) {
        const version = spawnSync(join(K8S_BIN, 'kube-proxy'), ['--version'], { encoding: 'utf8' });
        return { table, version: version.stdout.trim() };
      }
      if (Date.now() > deadline)
        throw new Error(
          `kube-proxy wrote no DNAT of ${svc.clusterIp} to ${svc.endpointIp} in 60 s:\n${table}\n${tail(log)}`,
        );
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    proxy.kill('SIGTERM');
    await new Promise((r) => (proxy.exitCode !== null ? r(undefined) : proxy.once('exit', r)));
    await cp.stop();
    deleteNetns(ns.name);
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-3000);
  } catch {
    return '';
  }
}
