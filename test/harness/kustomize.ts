// The shipped kustomizations built as users build them: with kustomize v5 (the one in the kubectl
// of API servers 1.27 and later), here Debian trixie's, run in the cached trixie chroot
// (test/smcr-vm/trixie-chroot.sh). kubectl 1.37's built-in kustomize
// (v5) is the other builder the suites use.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';

let chroot: string | undefined;

/** The chroot with kustomize in it (made and installed once, then cached). */
function kustomizeChroot(): string {
  if (chroot) return chroot;
  const r = spawnSync('bash', ['test/smcr-vm/trixie-chroot.sh', 'kustomize'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot prepare kustomize: ${r.stderr.slice(-2000)}`);
  return (chroot = r.stdout.trim().split('\n').pop()!);
}

/** `kustomize build DIR` (a path below manifests/), with what it printed on stderr. */
export function kustomizeBuild(dir: string): {
  status: number | null;
  stdout: string;
  stderr: string;
} {
  const root = kustomizeChroot();
  const tmp = mkdtempSync(join(root, 'tmp', 'manifests-'));
  try {
    cpSync('manifests', join(tmp, 'manifests'), { recursive: true });
    const inside = `/${relative(root, join(tmp, dir))}`;
    const r = spawnSync(
      'chroot',
      [root, '/usr/bin/env', '-i', 'PATH=/usr/bin:/bin', 'kustomize', 'build', inside],
      {
        encoding: 'utf8',
      },
    );
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
