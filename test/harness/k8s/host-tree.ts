// The host tree a test node's agent and runtime see: eRDMA devices in a fake sysfs (no eRDMA here),
// their device nodes (a harmless 1:3, since the runtime wants real character devices), Alibaba
// Cloud Linux's os-release, Debian's reference CNI plugins and the primary CNI's conflist; and a
// fake /proc with a kernel that has SMC-R's knob.
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { CNI_BIN_DIR } from '../../helpers/netns.js';

export interface HostTreeOptions {
  /** host-local's data directory. */
  readonly ipamDir: string;
  readonly podCidr: string;
  /** Give pods a default route through the bridge (isGateway alone gives them none). */
  readonly defaultRoute?: boolean;
}

const ERDMA_COUNTERS = {
  tx_bytes_cnt: 0,
  rx_bytes_cnt: 0,
  tx_packets_cnt: 0,
  rx_packets_cnt: 0,
  tx_disable_drop_cnt: 0,
  rx_pps_limit_drop_cnt: 0,
};

/** The hw_counters directory of an eRDMA device's port 1 in the tree. */
export const hwCounters = (root: string, device: string): string =>
  join(root, 'sys/class/infiniband', device, 'ports/1/hw_counters');

/** Writes the tree under root; returns the primary conflist's path. */
export function writeHostTree(root: string, o: HostTreeOptions): string {
  cpSync('test/fixtures/sysfs/node-a', root, { recursive: true });
  // The upstream erdma driver's port counters, which the agent exports (a test may advance them).
  for (const dev of ['erdma_0', 'erdma_2']) {
    const dir = hwCounters(root, dev);
    mkdirSync(dir, { recursive: true });
    for (const [name, value] of Object.entries(ERDMA_COUNTERS))
      writeFileSync(join(dir, name), `${value}\n`);
  }
  mkdirSync(join(root, 'dev/infiniband'), { recursive: true });
  for (const d of ['uverbs0', 'uverbs1', 'uverbs2', 'rdma_cm'])
    execFileSync('mknod', ['-m', '0666', join(root, 'dev/infiniband', d), 'c', '1', '3']);
  mkdirSync(join(root, 'etc/cni/net.d'), { recursive: true });
  mkdirSync(join(root, 'opt/cni/bin'), { recursive: true });
  for (const p of ['bridge', 'host-local', 'loopback'])
    symlinkSync(join(CNI_BIN_DIR, p), join(root, 'opt/cni/bin', p));
  writeFileSync(
    join(root, 'etc/os-release'),
    'PRETTY_NAME="Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)"\n',
  );
  const ipam = {
    type: 'host-local',
    subnet: o.podCidr,
    ...(o.defaultRoute ? { routes: [{ dst: '0.0.0.0/0' }] } : {}),
    dataDir: o.ipamDir,
  };
  const conflist = join(root, 'etc/cni/net.d/10-k8s.conflist');
  writeFileSync(
    conflist,
    `${JSON.stringify({ cniVersion: '0.4.0', name: 'k8s-pod-network', plugins: [{ type: 'bridge', bridge: 'cni0', isGateway: true, ipam }] }, null, 2)}\n`,
  );
  return conflist;
}

/** A /proc for the agent: Alibaba Cloud Linux 3's kernel release and its net.smc.tcp2smc. */
export function writeFakeProc(proc: string): void {
  mkdirSync(join(proc, 'sys/kernel'), { recursive: true });
  mkdirSync(join(proc, 'sys/net/smc'), { recursive: true });
  writeFileSync(join(proc, 'sys/kernel/osrelease'), '5.10.134-17.3.al8.x86_64\n');
  writeFileSync(join(proc, 'sys/net/smc/tcp2smc'), '0\n');
}
