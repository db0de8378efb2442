// What a real-component suite needs from the machine, said once: `requires(suite, ...checks)`
// answers '' when everything is there, else why not, and the suite skips (describe.skipIf). Under
// CI nothing may be missing: it throws instead, so no suite passes there by being skipped.
import { existsSync } from 'node:fs';
import { binariesPresent } from '../harness/k8s/control-plane.js';
import { canUseNetns, hasDebianCniPlugins } from './netns.js';

/** A check: '' when the thing is there, else why it is not. */
export type Check = () => string;

export function requires(suite: string, ...checks: Check[]): string {
  for (const check of checks) {
    const why = check();
    if (why === '') continue;
    if (process.env.CI) throw new Error(`${suite} cannot run in CI: ${why}`);
    console.warn(`\n*** SKIPPING ${suite}: ${why} ***\n`);
    return why;
  }
  return '';
}

/** The harness's Kubernetes binaries, already built (test/harness/k8s/build.sh builds and caches them). */
export const k8sBinaries =
  (names: readonly string[]): Check =>
  () => {
    const missing = binariesPresent(names);
    return missing.length > 0
      ? `not built: ${missing.join(', ')} (run test/harness/k8s/build.sh)`
      : '';
  };

export const root: Check = () => (process.getuid?.() === 0 ? '' : 'needs root');
export const netns: Check = () => (canUseNetns() ? '' : 'needs root and ip netns');
export const cniPlugins: Check = () =>
  hasDebianCniPlugins()
    ? ''
    : "Debian's CNI plugins missing (apt-get install containernetworking-plugins)";
export const iptables: Check = () => (existsSync('/usr/sbin/iptables') ? '' : 'iptables missing');

/** A program on PATH (a Debian package the suite names). */
export const onPath =
  (program: string, debianPackage: string): Check =>
  () =>
    (process.env.PATH ?? '').split(':').some((dir) => dir !== '' && existsSync(`${dir}/${program}`))
      ? ''
      : `${program} missing (apt-get install ${debianPackage})`;

/** kube-apiserver and kubectl of 1.35, the oldest minor the suites run (build.sh k8s-1.35). */
export const k8s135: Check = () =>
  binariesPresent(['kube-apiserver', 'kubectl'], '1.35').length === 0
    ? ''
    : 'Kubernetes 1.35 not built (run test/harness/k8s/build.sh k8s-1.35)';
