// Our plugin invoked by a real container runtime: containerd 2 (built from the Go module proxy) and Debian's runc run pod sandboxes
// asked for over the CRI (gRPC on a unix socket, as kubelet does), and containerd itself runs the
// chain bridge + host-local + erdma-smcr with the pod annotations it passes through the
// io.kubernetes.cri.pod-annotations capability. containerd runs in a network namespace the test
// created, so the bridge lives there.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildBusyboxImage,
  cniNetns,
  containerdAvailable,
  startContainerd,
  type Containerd,
} from '../../harness/containerd.js';
import { CNI_BIN_DIR, cleanupNetns, createNetns } from '../../helpers/netns.js';
import { cniPlugins, requires } from '../../helpers/requires.js';

const why = requires('the containerd suite', containerdAvailable, cniPlugins);
const PLUGIN = join(process.cwd(), 'native/build/erdma-smcr');
const PAUSE = 'erdma-smcr.test/pause:1';

interface Status {
  status: {
    id: string;
    state: string;
    network: { ip: string };
    annotations: Record<string, string>;
  };
  info: Record<string, string>;
}

describe.skipIf(why !== '')('our plugin run by containerd through the CRI', () => {
  let dir: string;
  let ctrd: Containerd;
  const netnsBefore = new Set(cniNetns());
  const cgroupParent = `/erdma-smcr-test-${process.pid}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cri-cni-'));
    const ns = createNetns('ctrd');
    buildBusyboxImage(PAUSE, join(dir, 'pause.tar'), ['/bin/sleep', '2147483647']);
    ctrd = await startContainerd({
      enter: [`--net=${ns.path}`],
      sandboxImage: PAUSE,
      images: [join(dir, 'pause.tar')],
      cni: {
        plugins: {
          bridge: `${CNI_BIN_DIR}/bridge`,
          'host-local': `${CNI_BIN_DIR}/host-local`,
          loopback: `${CNI_BIN_DIR}/loopback`,
          'erdma-smcr': PLUGIN,
        },
        conflist: {
          cniVersion: '1.0.0',
          name: 'k8s-pod-network',
          plugins: [
            {
              type: 'bridge',
              bridge: 'cni0',
              isGateway: true,
              ipam: { type: 'host-local', subnet: '10.77.0.0/24', dataDir: join(dir, 'ipam') },
            },
            {
              type: 'erdma-smcr',
              capabilities: { 'io.kubernetes.cri.pod-annotations': true },
              pnetId: '00163E000001',
              stateDir: join(dir, 'state'),
              logFile: join(dir, 'cni.log'),
            },
          ],
        },
      },
    });
  }, 120_000);

  afterAll(async () => {
    await ctrd?.stop();
    for (const n of cniNetns()) if (!netnsBefore.has(n)) execFileSync('ip', ['netns', 'del', n]);
    for (const c of [
      'cpu',
      'cpuacct',
      'cpuset',
      'memory',
      'devices',
      'freezer',
      'blkio',
      'pids',
      'systemd',
    ]) {
      try {
        rmdirSync(join('/sys/fs/cgroup', c, cgroupParent));
      } catch {
        // not created in this hierarchy
      }
    }
    cleanupNetns();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const run = (
    name: string,
    annotations: Record<string, string>,
  ): Promise<{ pod_sandbox_id: string }> =>
    ctrd.call('RunPodSandbox', {
      config: {
        metadata: { name, uid: `uid-${name}`, namespace: 'apps', attempt: 0 },
        hostname: name,
        log_directory: join(dir, 'logs', name),
        annotations,
        linux: { cgroup_parent: cgroupParent },
      },
    });

  const netnsOf = (st: Status): string => {
    const spec = JSON.parse(st.info.info as string).runtimeSpec;
    return spec.linux.namespaces.find((n: { type: string; path?: string }) => n.type === 'network')
      .path;
  };
  const sysctlIn = (netns: string, key: string): string =>
    execFileSync('nsenter', [`--net=${netns}`, 'cat', `/proc/sys/${key.replace(/\./g, '/')}`], {
      encoding: 'utf8',
    }).trim();
  const records = (): string[] =>
    existsSync(join(dir, 'state')) ? readdirSync(join(dir, 'state')) : [];

  it('speaks CRI v1 with containerd 2', async () => {
    const v = await ctrd.call<{
      runtime_name: string;
      runtime_version: string;
      runtime_api_version: string;
    }>('Version', { version: 'v1' });
    expect(v).toMatchObject({ runtime_name: 'containerd', runtime_api_version: 'v1' });
    expect(v.runtime_version).toMatch(/^v2\./);
  });

  it('an SMC-R pod sandbox: containerd passes the annotations, our plugin sets up its netns and records it; stopping it runs our DEL', async () => {
    const { pod_sandbox_id: id } = await run('smcr', {
      'network.alibabacloud.com/erdma-smcr': 'true',
    });
    const st = await ctrd.call<Status>('PodSandboxStatus', { pod_sandbox_id: id, verbose: true });
    expect(st.status.state).toBe('SANDBOX_READY');
    expect(st.status.network.ip).toMatch(/^10\.77\.0\.\d+$/);
    const netns = netnsOf(st);
    // IPv6 off inside the pod (SMC-R carries IPv4), on in the runtime's own netns.
    expect(sysctlIn(netns, 'net.ipv6.conf.all.disable_ipv6')).toBe('1');
    const record = JSON.parse(readFileSync(join(dir, 'state', `${id}_eth0.json`), 'utf8'));
    expect(record).toMatchObject({
      podNamespace: 'apps',
      podName: 'smcr',
      podUid: 'uid-smcr',
      containerId: id,
      ifname: 'eth0',
      netns,
    });
    // This kernel has no SMC: the plugin says so and lets networking proceed.
    expect(record.outcome).toBe('partial');
    expect(record.missing).toContain('net.smc.tcp2smc');
    expect(readFileSync(join(dir, 'cni.log'), 'utf8')).toMatch(
      /net\.smc\.tcp2smc does not exist on this kernel/,
    );

    await ctrd.call('StopPodSandbox', { pod_sandbox_id: id });
    expect(records()).not.toContain(`${id}_eth0.json`);
    await ctrd.call('RemovePodSandbox', { pod_sandbox_id: id });
  }, 120_000);

  it('a pod without the annotation is passed through untouched', async () => {
    const { pod_sandbox_id: id } = await run('plain', { team: 'a' });
    const st = await ctrd.call<Status>('PodSandboxStatus', { pod_sandbox_id: id, verbose: true });
    expect(st.status.state).toBe('SANDBOX_READY');
    expect(sysctlIn(netnsOf(st), 'net.ipv6.conf.all.disable_ipv6')).toBe('0');
    expect(records()).not.toContain(`${id}_eth0.json`);
    await ctrd.call('StopPodSandbox', { pod_sandbox_id: id });
    await ctrd.call('RemovePodSandbox', { pod_sandbox_id: id });
  }, 120_000);
});
