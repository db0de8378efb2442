// A node daemon's start-up failure as one line: which errors are turned into one, and which are not.
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startFailure } from '../../../src/roles/startup.js';
import { AppError, isAppError } from '../../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'startup-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const errno = (code: string, path: string, dest?: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`${code}: ${path}`), { code, path, ...(dest ? { dest } : {}) });

const message = (err: unknown): string => {
  expect(isAppError(err)).toBe(true);
  return (err as AppError).message;
};

describe('startFailure', () => {
  it('names the missing directory, not the file about to be written into it', () => {
    const m = message(startFailure('agent', errno('ENOENT', join(dir, 'opt/cni/bin/erdma-smcr'))));
    expect(m).toBe(
      `cannot start the agent: ${join(dir, 'opt/cni/bin')} does not exist: mount the host directory there, or change agent.hostRoot or the agent.* path that names it`,
    );
  });

  it('names the destination of a copy when its source exists', () => {
    mkdirSync(join(dir, 'src'), { recursive: true });
    const m = message(
      startFailure('device plugin', errno('ENOENT', join(dir, 'src'), join(dir, 'gone/x'))),
    );
    expect(m).toMatch(/^cannot start the device plugin: .*\/gone does not exist/);
  });

  it('a copy whose source is missing: what this package ships is not built, and how to build it', () => {
    const m = message(
      startFailure(
        'agent',
        errno(
          'ENOENT',
          join(dir, 'native/build/erdma-smcr'),
          join(dir, 'host/opt/cni/bin/erdma-smcr'),
        ),
      ),
    );
    expect(m).toMatch(
      new RegExp(
        `^cannot start the agent: ${join(dir, 'native/build/erdma-smcr')} does not exist: it is built from native/ \\(make -C native`,
      ),
    );
    expect(m).not.toMatch(/mount the host directory/);
  });

  it.each(['EACCES', 'EROFS', 'EPERM'])('%s: the path and the likely cause', (code) => {
    expect(message(startFailure('device plugin', errno(code, '/k/device-plugins')))).toBe(
      `cannot start the device plugin: /k/device-plugins: ${code} (mounted read-only, or not root?)`,
    );
  });

  it.each(['ENOTDIR', 'EEXIST'])('%s: a file where a directory should be', (code) => {
    expect(message(startFailure('agent', errno(code, '/h/etc/cni/net.d')))).toMatch(
      new RegExp(`^cannot start the agent: /h/etc/cni/net.d: ${code} \\(a file where a directory`),
    );
  });

  it('leaves an AppError, an errno without a path, and any other error as they are', () => {
    const app = new AppError('START_FAILED', 'cannot listen on 0.0.0.0:9809');
    expect(startFailure('agent', app)).toBe(app);
    const noPath = Object.assign(new Error('EMFILE'), { code: 'EMFILE' });
    expect(startFailure('agent', noPath)).toBe(noPath);
    const other = new TypeError('x is undefined');
    expect(startFailure('device plugin', other)).toBe(other);
    expect(startFailure('agent', 'a string')).toBe('a string');
  });
});
