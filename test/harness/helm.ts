// helm 4 from the harness cache (test/harness/k8s/build.sh helm), with homes of its own so that
// no user configuration, repository or plugin of this machine is read.
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binPath } from './k8s/control-plane.js';

export const CHART = 'charts/erdma-smcr';
/** The README's Helm install and uninstall, word for word (the chart suite checks the README says them). */
export const HELM_INSTALL = [
  'install',
  'erdma-smcr',
  CHART,
  '--namespace',
  'erdma-smcr',
  '--create-namespace',
];
export const HELM_UNINSTALL = ['uninstall', 'erdma-smcr', '-n', 'erdma-smcr'];

export function helmEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const home = join(tmpdir(), 'erdma-smcr-helm');
  return {
    ...process.env,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
    HELM_PLUGINS: join(home, 'plugins'),
    ...extra,
  };
}

/** `helm template erdma-smcr charts/erdma-smcr --namespace erdma-smcr ARGS`. */
export function helmTemplate(args: readonly string[]): {
  status: number | null;
  stdout: string;
  stderr: string;
} {
  const r = spawnSync(
    binPath('helm'),
    ['template', 'erdma-smcr', CHART, '--namespace', 'erdma-smcr', ...args],
    { encoding: 'utf8', env: helmEnv() },
  );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
