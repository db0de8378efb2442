// Which programs of a pod hold plain TCP connections, and why they are not SMC: read from /proc
// only (the agent runs with hostPID). A process is of the pod when its network namespace is the
// pod's; a connection is plain TCP when the process holds the inode of a connected socket of
// /proc/<pid>/net/tcp or tcp6, in any state but LISTEN, TIME_WAIT and CLOSE (a peer that closed
// first leaves it in CLOSE_WAIT while the program reads on). SMC sockets, and the TCP socket each
// SMC connection keeps inside the kernel, are not in any process's file table as TCP. Under the preload mechanism the cause is
// told apart from the process's own mappings and environment (#69).
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PRELOAD } from '../../constants.js';
import { procOf } from '../host.js';

/**
 * static: no dynamic loader in the process, so LD_PRELOAD is never read; cleared: a dynamically
 * linked program whose environment no longer names the library (it, or what started it, cleared or
 * replaced LD_PRELOAD); not-loaded: named, yet not mapped (setuid, or a libc the library does not
 * fit, such as musl); loaded: the library is there and the socket is TCP all the same (opened before
 * the library could act, or AF_SMC refused).
 */
export type PlainTcpCause = 'static' | 'cleared' | 'not-loaded' | 'loaded';

export interface PlainTcpProgram {
  readonly pid: number;
  /** /proc/<pid>/comm. */
  readonly comm: string;
  /** Its connected TCP sockets, none of them SMC. */
  readonly connections: number;
  readonly cause: PlainTcpCause;
}

const read = (path: string): string => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

/** TCP states of include/net/tcp_states.h a program holds no connection in: TIME_WAIT, CLOSE, LISTEN. */
const NOT_CONNECTED = new Set(['06', '07', '0A']);

/** Inodes of the connected sockets in a /proc/<pid>/net/tcp{,6} table. */
function connectedInodes(table: string): Set<string> {
  const out = new Set<string>();
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
    if (f.length > 9 && !NOT_CONNECTED.has(f[3]!) && f[9] !== '0') out.add(f[9]!);
  }
  return out;
}

function socketInodes(procRoot: string, pid: string): string[] {
  const dir = procOf(procRoot, pid, 'fd');
  const out: string[] = [];
  let fds: string[];
  try {
    fds = readdirSync(dir);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(join(dir, fd)));
      if (m) out.push(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** Why this process's TCP sockets were not made SMC by the preload library. */
export function preloadCause(maps: string, environ: string): PlainTcpCause {
  if (maps.includes(`/${PRELOAD.library}`)) return 'loaded';
  // A dynamically linked program maps its loader (glibc's ld-linux, musl's ld-musl).
  if (!/\/ld-(linux|musl)[^/\s]*\.so/.test(maps)) return 'static';
  const preload = environ.split('\0').find((e) => e.startsWith('LD_PRELOAD=')) ?? '';
  return preload.includes(PRELOAD.library) ? 'not-loaded' : 'cleared';
}

/**
 * The programs in the network namespace `netnsPath` (as the agent reaches it) holding plain TCP
 * connections, with the cause under the preload mechanism.
 */
export function plainTcpPrograms(procRoot: string, netnsPath: string): PlainTcpProgram[] {
  let want: string;
  try {
    want = `net:[${statSync(netnsPath).ino}]`;
  } catch {
    return [];
  }
  let tcp: Set<string> | undefined;
  const out: PlainTcpProgram[] = [];
  for (const pid of readdirSync(procRoot).filter((p) => /^\d+$/.test(p))) {
    try {
      if (readlinkSync(procOf(procRoot, pid, 'ns', 'net')) !== want) continue;
    } catch {
      continue;
    }
    tcp ??= new Set([
      ...connectedInodes(read(procOf(procRoot, pid, 'net', 'tcp'))),
      ...connectedInodes(read(procOf(procRoot, pid, 'net', 'tcp6'))),
    ]);
    const connections = socketInodes(procRoot, pid).filter((i) => tcp!.has(i)).length;
    if (connections === 0) continue;
    out.push({
      pid: Number(pid),
      comm: read(procOf(procRoot, pid, 'comm')).trim(),
      connections,
      cause: preloadCause(
        read(procOf(procRoot, pid, 'maps')),
        read(procOf(procRoot, pid, 'environ')),
      ),
    });
  }
  return out;
}

/** What a person is told of a program left on TCP under the preload mechanism, with the fix. */
export function describePlainTcp(p: PlainTcpProgram): string {
  const who = `${p.comm || '?'} (pid ${p.pid}, ${p.connections} connection(s))`;
  switch (p.cause) {
    case 'static':
      return `${who} is a statically linked program: the preload library cannot reach it. Fix: run the pod on nodes with an in-kernel mechanism (smcr.erdma.io/mechanism bpf or tcp2smc), or link the program dynamically against glibc`;
    case 'cleared':
      return `${who} runs without the library in LD_PRELOAD: the program, or what started it, cleared or replaced it. Fix: append to LD_PRELOAD instead of replacing it, or run the pod on nodes with an in-kernel mechanism`;
    case 'not-loaded':
      return `${who} names the library in LD_PRELOAD but did not load it (a setuid program, or a libc other than glibc such as musl). Fix: run the pod on nodes with an in-kernel mechanism`;
    default:
      return `${who} loaded the library and still holds TCP sockets (opened before the library acted, or AF_SMC refused them)`;
  }
}
