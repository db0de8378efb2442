// A process's memory as the kubelet reads it (#43): each container runs in a memory cgroup of its
// own, and the kubelet (through cAdvisor) reports its working set, the cgroup's usage less its
// inactive file pages; that is what `kubectl top` shows and what the kubelet evicts on. A page of
// a file is charged to the cgroup that first brought it into memory, so which container pays for
// `node`'s pages depends on which one starts first on a node whose page cache does not hold them.
// Cgroup v1 (`memory.usage_in_bytes`, `total_inactive_file`) and v2 (`memory.current`,
// `inactive_file`), as cAdvisor reads each.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';

const V1 = '/sys/fs/cgroup/memory';
const V2 = '/sys/fs/cgroup';

/** A memory cgroup's figures, in bytes. */
export interface CgroupMemory {
  /** What the cgroup is charged (v1 memory.usage_in_bytes, v2 memory.current). */
  readonly usage: number;
  readonly anon: number;
  /** Pages of files (the page cache) charged to it. */
  readonly file: number;
  readonly inactiveFile: number;
  /** Of `file`, the pages its processes map (the executable's among them). */
  readonly mappedFile: number;
  /** cAdvisor's working set: usage less the inactive file pages. */
  readonly workingSet: number;
}

export interface MemoryCgroup {
  readonly path: string;
  /** Where a process writes its pid to join. */
  readonly procs: string;
  read(): CgroupMemory;
  /** Removes the cgroup; its processes must have exited. */
  remove(): void;
}

const v1 = (): boolean => existsSync(join(V1, 'memory.stat'));

/** The figures of the memory cgroup `name` (a path under the hierarchy's root), as cAdvisor reads them. */
export function readMemoryCgroup(name: string): CgroupMemory {
  const isV1 = v1();
  const path = join(isV1 ? V1 : V2, name);
  const usage = Number(
    readFileSync(join(path, isV1 ? 'memory.usage_in_bytes' : 'memory.current'), 'utf8'),
  );
  const s = new Map(
    readFileSync(join(path, 'memory.stat'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '))
      .map(([k = '', v = '0']) => [k, Number(v)]),
  );
  const get = (v1Key: string, v2Key: string): number => s.get(isV1 ? v1Key : v2Key) ?? 0;
  const inactiveFile = get('total_inactive_file', 'inactive_file');
  return {
    usage,
    anon: get('total_rss', 'anon'),
    file: get('total_cache', 'file'),
    inactiveFile,
    mappedFile: get('total_mapped_file', 'file_mapped'),
    workingSet: Math.max(0, usage - inactiveFile),
  };
}

/** A new memory cgroup under the hierarchy's root; an error says why there is none. */
export function memoryCgroup(name: string): MemoryCgroup {
  const isV1 = v1();
  if (!isV1 && !readFileSync(join(V2, 'cgroup.subtree_control'), 'utf8').includes('memory'))
    throw new Error(`no memory cgroup controller at ${V1} or ${V2}`);
  const path = join(isV1 ? V1 : V2, name);
  mkdirSync(path);
  return {
    path,
    procs: join(path, 'cgroup.procs'),
    read: () => readMemoryCgroup(name),
    remove() {
      rmdirSync(path);
    },
  };
}

/** A command line that joins `cgroup` and then runs `file` with `args`, so that all it touches is charged there. */
export function inCgroup(cgroup: MemoryCgroup, file: string, args: string[]): [string, string[]] {
  return ['sh', ['-c', 'echo $$ > "$0" && exec "$@"', cgroup.procs, file, ...args]];
}

/**
 * A copy of an executable none of whose pages are in memory, as on a node where no process has run
 * it yet: copied, written out, and its pages dropped from the page cache.
 */
export function uncachedCopy(file: string, dir: string): string {
  const copy = join(dir, 'node');
  copyFileSync(file, copy);
  execFileSync('sync', [copy]);
  // GNU dd: with count=0, iflag=nocache drops the whole file's cached pages.
  execFileSync('dd', [`if=${copy}`, 'iflag=nocache', 'count=0', 'status=none']);
  return copy;
}
