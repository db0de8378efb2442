// Which programs of a pod hold plain TCP connections, and why the preload library did not reach
// them: read from this machine's real /proc, over real processes (a node child connected to a
// server of this test, in this test's own network namespace). The static and the library-loaded
// cases need a kernel with AF_SMC: test/vm/transparent.test.ts reads them in the VM.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  describePlainTcp,
  plainTcpPrograms,
  preloadCause,
} from '../../../../src/agent/observe/programs.js';

const LDSO = '7f00-7f01 r--p 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n';
const LIB = '7f10-7f11 r-xp 00000000 00:1f 456 /run/erdma-smcr-preload/libsmc-preload.so\n';

describe('why a program stayed on TCP under preload', () => {
  it.each([
    [
      'a static binary (no loader mapped)',
      '00400000-00500000 r-xp 0 08:01 9 /bin/busybox\n',
      '',
      'static',
    ],
    ['a dynamic program without the library in LD_PRELOAD', LDSO, 'PATH=/bin\0', 'cleared'],
    [
      'a program whose LD_PRELOAD names the library it did not load',
      LDSO,
      'LD_PRELOAD=/run/erdma-smcr-preload/libsmc-preload.so\0',
      'not-loaded',
    ],
    ['a program that loaded it', LDSO + LIB, '', 'loaded'],
    ['musl', '7f00-7f01 r-xp 0 08:01 1 /lib/ld-musl-x86_64.so.1\n', '', 'cleared'],
  ])('%s', (_, maps, environ, cause) => {
    expect(preloadCause(maps, environ)).toBe(cause);
  });

  it('says what to do for each cause', () => {
    const p = { pid: 7, comm: 'app', connections: 2 };
    expect(describePlainTcp({ ...p, cause: 'static' })).toMatch(
      /^app \(pid 7, 2 connection\(s\)\) is a statically linked program.*Fix: run the pod on nodes with an in-kernel mechanism/,
    );
    expect(describePlainTcp({ ...p, cause: 'cleared' })).toMatch(
      /cleared or replaced it\. Fix: append to LD_PRELOAD/,
    );
    expect(describePlainTcp({ ...p, cause: 'not-loaded' })).toMatch(
      /setuid program, or a libc other than glibc/,
    );
  });
});

describe('the programs of a network namespace holding plain TCP connections', () => {
  let server: Server | undefined;
  let child: ChildProcess | undefined;
  const accepted: Socket[] = [];
  afterEach(async () => {
    child?.kill('SIGKILL');
    for (const s of accepted) s.destroy();
    accepted.length = 0;
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    server = child = undefined;
  });

  async function holdConnection(env: NodeJS.ProcessEnv): Promise<number> {
    server = createServer((s) => accepted.push(s));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    child = spawn(
      process.execPath,
      [
        '-e',
        `require('net').connect(${port}, '127.0.0.1', () => console.log('up')); setInterval(() => {}, 1000)`,
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    await once(child.stdout!, 'data');
    return child.pid!;
  }

  it('names a dynamically linked program run without the library: cleared', async () => {
    const pid = await holdConnection({ PATH: process.env.PATH });
    const found = plainTcpPrograms('/proc', '/proc/self/ns/net').find((p) => p.pid === pid);
    expect(found).toEqual({ pid, comm: 'node', connections: 1, cause: 'cleared' });
  });

  it('names one whose LD_PRELOAD names a library it could not load: not-loaded', async () => {
    const pid = await holdConnection({
      PATH: process.env.PATH,
      LD_PRELOAD: '/nonexistent/erdma-smcr-preload/libsmc-preload.so',
    });
    const found = plainTcpPrograms('/proc', '/proc/self/ns/net').find((p) => p.pid === pid);
    expect(found).toMatchObject({ pid, connections: 1, cause: 'not-loaded' });
  });

  it('finds nothing for a namespace path that does not exist', () => {
    expect(plainTcpPrograms('/proc', '/nonexistent/netns')).toEqual([]);
  });
});
