// What processes hold resident together, each physical page counted once (#43: what a node pays
// for the agent and the device plugin). Their VmRSS figures add up the pages of the files both
// map (the `node` executable, shared libraries) once per process; the kernel keeps one copy. Two
// containers of one image map the same files: containerd's overlayfs snapshots of one image share
// its layers' directories as their lower layers, and overlayfs maps the lower file's own pages
// (test/integration/bench/pages.test.ts runs that).
//
// The physical frame of each resident page is read from /proc/PID/pagemap (Linux's
// Documentation/admin-guide/mm/pagemap.rst: one 64-bit entry per virtual page, bit 63 "present",
// bits 0-54 the frame number, zero for readers without CAP_SYS_ADMIN).
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

const PAGE = 4096;
/** Entries read from pagemap at a time (512 KiB). */
const CHUNK = 65_536;

/** The virtual ranges of a process's mappings, in pages: [first, end). */
function mappedPages(pid: number): [number, number][] {
  return readFileSync(`/proc/${pid}/maps`, 'utf8')
    .split('\n')
    .filter((l) => l && !l.endsWith('[vsyscall]')) // above the user address space; no entries
    .map((l) => {
      const [from = '', to = ''] = (l.split(' ')[0] ?? '').split('-');
      return [Number(BigInt(`0x${from}`) / BigInt(PAGE)), Number(BigInt(`0x${to}`) / BigInt(PAGE))];
    });
}

/**
 * The physical frames of a process's resident pages. Throws when the frame numbers are hidden
 * (a reader without CAP_SYS_ADMIN reads them as zero), saying so.
 */
export function residentFrames(pid: number): Set<number> {
  const frames = new Set<number>();
  let present = 0;
  const fd = openSync(`/proc/${pid}/pagemap`, 'r');
  try {
    const buf = Buffer.alloc(CHUNK * 8);
    for (const [first, end] of mappedPages(pid)) {
      for (let page = first; page < end; page += CHUNK) {
        const n = Math.min(CHUNK, end - page);
        const read = readSync(fd, buf, 0, n * 8, page * 8) / 8;
        for (let i = 0; i < read; i++) {
          const high = buf.readUInt32LE(i * 8 + 4);
          if (high & 0x8000_0000) {
            present++;
            // Bits 0-54: the low word and the high word's 23 low bits.
            frames.add((high & 0x7f_ffff) * 2 ** 32 + buf.readUInt32LE(i * 8));
          }
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  if (present > 1 && frames.size === 1 && frames.has(0))
    throw new Error(
      `/proc/${pid}/pagemap gives no frame numbers to this process: counting pages shared between processes needs CAP_SYS_ADMIN (run as root)`,
    );
  return frames;
}

/** Processes' resident memory, in bytes: each one's, and all of theirs with each page counted once. */
export function residentTogether(pids: readonly number[]): { each: number[]; together: number } {
  const all = new Set<number>();
  const each = pids.map((pid) => {
    const frames = residentFrames(pid);
    for (const f of frames) all.add(f);
    return frames.size * PAGE;
  });
  return { each, together: all.size * PAGE };
}
