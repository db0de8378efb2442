// A node daemon's start-up failure as one line (the agent's and the device plugin's): a host path
// it needs and cannot find or write, with the setting that names it; an AppError (a port, a
// socket) as it is. Anything else stays an internal error, with its stack.
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { AppError, isAppError } from '../errors.js';

export type Daemon = 'agent' | 'device plugin' | 'DRA driver';

/**
 * The source of a copy is what this package ships (the native binary, the preload library): on a
 * checkout, nothing has built it yet.
 */
function notBuilt(cannot: string, path: string): AppError {
  return new AppError(
    'START_FAILED',
    `${cannot}: ${path} does not exist: it is built from native/ (make -C native, with Debian's build-essential, clang, llvm, bpftool, libbpf-dev, libelf-dev and zlib1g-dev; npm test builds it too), or run the image, which has it`,
  );
}

/** A path that is not there: what this package ships and nothing built, or a host directory. */
function missing(cannot: string, path: string, dest: string | undefined): AppError {
  if (dest !== undefined && !existsSync(path)) return notBuilt(cannot, path);
  // A copy names both ends (path, dest): the missing one is where it was going.
  const gone = dest !== undefined ? dest : path;
  // Name the directory that is missing, not the file we were about to write into it.
  const where = existsSync(dirname(gone)) ? gone : dirname(gone);
  return new AppError(
    'START_FAILED',
    `${cannot}: ${where} does not exist: mount the host directory there, or change agent.hostRoot or the agent.* path that names it`,
  );
}

export function startFailure(daemon: Daemon, err: unknown): unknown {
  if (isAppError(err)) return err;
  const e = err as NodeJS.ErrnoException & { dest?: string };
  if (!e?.code || !e.path) return err;
  const cannot = `cannot start the ${daemon}`;
  if (e.code === 'ENOENT') return missing(cannot, e.path, e.dest);
  if (e.code === 'EACCES' || e.code === 'EROFS' || e.code === 'EPERM')
    return new AppError(
      'START_FAILED',
      `${cannot}: ${e.path}: ${e.code} (mounted read-only, or not root?)`,
    );
  if (e.code === 'ENOTDIR' || e.code === 'EEXIST')
    return new AppError(
      'START_FAILED',
      `${cannot}: ${e.path}: ${e.code} (a file where a directory should be: change agent.hostRoot or the agent.* path that names it)`,
    );
  return err;
}
