// What processes hold resident together, each page once (bench/pages.ts): a process's own count
// agrees with the kernel's page-table walk, and two `node` processes started from two overlayfs
// mounts of one lower directory (how containerd's overlayfs snapshotter gives two containers one
// image's layer) hold one copy of node's pages between them. Real overlayfs mounts; root only (the frame
// numbers of /proc/PID/pagemap, and mount).
import { spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transformSync } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { idlingNode, killAll } from '../../helpers/idling.js';
import { requires, root } from '../../helpers/requires.js';
import { residentFrames, residentTogether } from '../../../bench/pages.js';

const why = requires('the resident-pages suite', root);
const MB = 1e6;

function mountOverlay(lower: string, dir: string): string {
  const [upper, work, merged] = ['upper', 'work', 'merged'].map((d) => join(dir, d)) as [
    string,
    string,
    string,
  ];
  for (const d of [upper, work, merged]) mkdirSync(d, { recursive: true });
  const r = spawnSync(
    'mount',
    [
      '-t',
      'overlay',
      'overlay',
      '-o',
      `lowerdir=${lower},upperdir=${upper},workdir=${work}`,
      merged,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`mount overlay on ${merged}: ${r.stderr.trim()}`);
  return merged;
}

describe.skipIf(why !== '')('resident pages counted once', () => {
  it("agrees with the kernel's page-table walk for one process", async () => {
    const child = await idlingNode(process.execPath);
    try {
      const pid = child.pid ?? 0;
      // smaps_rollup's Rss walks the page tables (VmRSS is a counter that lags by some pages per
      // thread). It counts a page mapped at two addresses twice (V8 maps some of its own twice:
      // about 0.5 MB in a bare node); the frames count it once.
      const rss = (): number =>
        Number(/^Rss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1]) *
        1024;
      const before = rss();
      const frames = residentFrames(pid).size * 4096;
      const after = rss();
      expect(frames).toBeLessThanOrEqual(Math.max(before, after));
      expect(frames).toBeGreaterThan(Math.min(before, after) - 2 * MB);
      expect(frames).toBeGreaterThan(20 * MB);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it("counts node's pages once for two containers of one image (overlayfs, one lower layer)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pages-'));
    const mounts: string[] = [];
    const children: ChildProcess[] = [];
    try {
      const lower = join(dir, 'layer');
      mkdirSync(lower);
      copyFileSync(process.execPath, join(lower, 'node'));
      for (const c of ['a', 'b']) mounts.push(mountOverlay(lower, join(dir, c)));
      for (const m of mounts) children.push(await idlingNode(join(m, 'node')));
      const { each, together } = residentTogether(children.map((c) => c.pid ?? 0));
      const [a = 0, b = 0] = each;
      expect(together).toBeGreaterThanOrEqual(Math.max(a, b));
      // A bare node has tens of MB of its executable's pages resident: one copy between the two.
      expect(a + b - together).toBeGreaterThan(15 * MB);
      // Two copies of the executable in two directories share nothing.
      const apart = join(dir, 'apart');
      mkdirSync(apart);
      copyFileSync(process.execPath, join(apart, 'node'));
      const other = await idlingNode(join(apart, 'node'));
      children.push(other);
      const split = residentTogether([children[0]?.pid ?? 0, other.pid ?? 0]);
      const [c = 0, d = 0] = split.each;
      expect(c + d - split.together).toBeLessThan(a + b - together - 10 * MB);
    } finally {
      await killAll(children);
      for (const m of mounts) spawnSync('umount', [m]);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says why when the frame numbers are hidden (no CAP_SYS_ADMIN)', () => {
    // The module, compiled, where user nobody can read it (the checkout may not be readable).
    const dir = mkdtempSync(join(tmpdir(), 'pages-nobody-'));
    try {
      chmodSync(dir, 0o755);
      const { code } = transformSync(readFileSync('bench/pages.ts', 'utf8'), {
        loader: 'ts',
        format: 'esm',
      });
      writeFileSync(join(dir, 'pages.mjs'), code);
      writeFileSync(
        join(dir, 'run.mjs'),
        "import { residentFrames } from './pages.mjs';\nresidentFrames(process.pid);\n",
      );
      const r = spawnSync(process.execPath, ['run.mjs'], {
        cwd: dir,
        uid: 65534,
        gid: 65534,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '' },
      });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain(
        `/proc/${r.pid}/pagemap gives no frame numbers to this process: counting pages shared between processes needs CAP_SYS_ADMIN (run as root)`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
