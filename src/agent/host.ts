// Where the agent finds things on its node. The host's root filesystem is mounted at `hostRoot`
// (`/` when the agent runs on the host, `/host` in its DaemonSet) and its /proc at `procRoot`;
// every path the agent reads or writes there is named here, once.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** A path of the host's filesystem: a configured directory (`/etc/cni/net.d`) or any other. */
export const inHost = (hostRoot: string, ...path: string[]): string => join(hostRoot, ...path);

/** /sys/class/CLASS[/...]: the device model's (src/devices/discovery.ts), for the agent's readers too. */
export { sysClass } from '../devices/discovery.js';

/** /sys/module/NAME[/...]: present when the module is loaded (or built in with parameters). */
export const sysModule = (hostRoot: string, name: string, ...rest: string[]): string =>
  join(hostRoot, 'sys', 'module', name, ...rest);

/** /sys/bus/pci/devices: one link per PCI function. */
export const pciDevices = (hostRoot: string): string =>
  join(hostRoot, 'sys', 'bus', 'pci', 'devices');

/** /etc/os-release. */
export const osReleaseFile = (hostRoot: string): string => join(hostRoot, 'etc', 'os-release');

/** /lib/modules/RELEASE: the modules of a kernel release, and its modules.dep/modules.builtin. */
export const kernelModulesDir = (hostRoot: string, release: string): string =>
  join(hostRoot, 'lib', 'modules', release);

/** /proc/sys/net/smc[/NAME]: SMC's sysctls, present once the smc module is loaded. */
export const smcSysctl = (procRoot: string, ...name: string[]): string =>
  join(procRoot, 'sys', 'net', 'smc', ...name);

/** /proc/sys/kernel/osrelease: the running kernel's release. */
export const kernelReleaseFile = (procRoot: string): string =>
  join(procRoot, 'sys', 'kernel', 'osrelease');

/** /proc/PID[/...]: one process (`self` for the agent). */
export const procOf = (procRoot: string, pid: string, ...rest: string[]): string =>
  join(procRoot, pid, ...rest);

/** A process of the pod (found by its UID in the cgroup path) and its network namespace. */
export function findPodNetns(procRoot: string, podUid: string): string | undefined {
  const needles = [`pod${podUid}`, `pod${podUid.replace(/-/g, '_')}`];
  let hostNet = '';
  try {
    hostNet = readlinkSync(procOf(procRoot, 'self', 'ns', 'net'));
  } catch {
    // unknown: accept any
  }
  for (const pid of readdirSync(procRoot).filter((p) => /^\d+$/.test(p))) {
    try {
      const cg = readFileSync(procOf(procRoot, pid, 'cgroup'), 'utf8');
      if (!needles.some((n) => cg.includes(n))) continue;
      const ns = procOf(procRoot, pid, 'ns', 'net');
      if (readlinkSync(ns) === hostNet) continue;
      return ns;
    } catch {
      // the process went away
    }
  }
  return undefined;
}
