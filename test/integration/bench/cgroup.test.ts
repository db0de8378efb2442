// A process's memory as the kubelet reads it (bench/cgroup.ts): two `node`s, each in a memory
// cgroup of its own as two containers are, started one after the other from a copy of node none
// of whose pages are in memory. The first is charged node's pages, the second only its own; the
// working set leaves out file pages read once. Real memory cgroups; root only.
import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { idlingNode, killAll } from '../../helpers/idling.js';
import { requires, root } from '../../helpers/requires.js';
import { inCgroup, memoryCgroup, uncachedCopy, type MemoryCgroup } from '../../../bench/cgroup.js';

const why = requires('the memory-cgroup suite', root);
const MB = 1e6;

describe.skipIf(why !== '')('memory as the kubelet reads it', () => {
  it("charges node's pages to the container that read them first", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cgroup-'));
    const cgroups: MemoryCgroup[] = [];
    const children: ChildProcess[] = [];
    try {
      const node = uncachedCopy(process.execPath, dir);
      for (const c of ['first', 'second']) {
        const cg = memoryCgroup(`erdma-bench-test-${process.pid}-${c}`);
        cgroups.push(cg);
        children.push(await idlingNode(node, (f, a) => inCgroup(cg, f, a)));
      }
      const [first, second] = cgroups.map((c) => c.read()) as [
        ReturnType<MemoryCgroup['read']>,
        ReturnType<MemoryCgroup['read']>,
      ];
      // Tens of MB of node's executable, charged once, to the first.
      expect(first.file).toBeGreaterThan(20 * MB);
      expect(second.file).toBeLessThan(2 * MB);
      // Of them, what the process maps: less than was read ahead.
      expect(first.mappedFile).toBeGreaterThan(15 * MB);
      expect(first.mappedFile).toBeLessThanOrEqual(first.file);
      // Each pays for its own heap.
      expect(first.anon).toBeGreaterThan(4 * MB);
      expect(second.anon).toBeGreaterThan(4 * MB);
      for (const m of [first, second]) {
        expect(m.workingSet).toBe(m.usage - m.inactiveFile);
        expect(m.usage).toBeGreaterThanOrEqual(m.anon + m.file - 1 * MB);
      }
      // Pages read once are inactive: the first's working set is far below what it is charged.
      expect(first.workingSet).toBeLessThan(first.usage - 20 * MB);
    } finally {
      await killAll(children);
      for (const cg of cgroups) cg.remove();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
