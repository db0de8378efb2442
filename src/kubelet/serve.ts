// Serving the kubelet on a unix socket, for both of its plugin protocols (the device plugin's
// DevicePlugin service, the DRA driver's DRAPlugin and registration services): bind (a stale
// socket replaced, a failed bind said as one line with its cause), a shutdown that cannot hang,
// grpc-js's own log lines in our JSON log, and the handler shape grpc-js calls.
import { accessSync, constants, existsSync, mkdirSync, unlinkSync } from 'node:fs';
import { posix } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';

/** A unary handler as grpc-js calls it, with the request and response types we read and write. */
export type Unary<Req, Res> = (
  call: { request: Req },
  cb: (err: grpc.ServiceError | null, res?: Res) => void,
) => void;

/** A server-streaming call as a handler holds it. */
export interface ServerStream {
  write(msg: unknown): boolean;
  end(): void;
  on(event: 'cancelled' | 'close' | 'error', fn: () => void): unknown;
}

/** How long calls in flight may take to finish when a server closes (a client may never finish one). */
export const SHUTDOWN_GRACE_MS = 2000;

/** A gRPC error the kubelet reads as the call's failure. */
export function grpcError(code: grpc.status, message: string): grpc.ServiceError {
  return { code, message } as grpc.ServiceError;
}

/** Graceful shutdown that cannot hang: calls still open after graceMs are cancelled. */
export async function shutdown(server: grpc.Server, graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const graceful = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([graceful, late]);
  clearTimeout(timer);
  server.forceShutdown();
}

/**
 * Why our socket could not be served, as one line. grpc-js reports a failed bind as "No address
 * added out of total 1 resolved errors: [...]"; the directory's own errno (EACCES, EROFS), when
 * it has one, names the cause and the path.
 */
export function bindFailure(dir: string, socket: string, err: unknown): unknown {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (dirErr) {
    return dirErr;
  }
  return new AppError(
    'START_FAILED',
    `cannot serve the kubelet on ${socket}: ${err instanceof Error ? err.message : String(err)}`,
  );
}

/**
 * Serves `server` on the unix socket `socket`, a stale socket of a previous run replaced; its
 * directory made when `makeDir` (the DRA driver's own directories; the device plugins' directory
 * is the kubelet's, and its absence is an error). On failure the server is shut and the error
 * says why (bindFailure).
 */
export async function serveUnix(
  server: grpc.Server,
  socket: string,
  makeDir = false,
): Promise<void> {
  const dir = posix.dirname(socket);
  try {
    if (makeDir) mkdirSync(dir, { recursive: true });
    if (existsSync(socket)) unlinkSync(socket);
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  } catch (err) {
    server.forceShutdown();
    throw bindFailure(dir, socket, err);
  }
}

/** Shuts the server within its grace and removes its socket: the kubelet then counts us as gone. */
export async function stopServing(server: grpc.Server | undefined, socket: string): Promise<void> {
  if (server) await shutdown(server);
  if (existsSync(socket)) unlinkSync(socket);
}

/**
 * grpc-js's own log lines ("E No address added..." on stderr by default) as JSON lines of the
 * process logger, so that the log stays one JSON object per line. Its verbosity is still
 * GRPC_VERBOSITY's (errors only by default); GRPC_TRACE's lines come at debug. No child logger
 * and no node:util: with them the device plugin's reading 3 s after start was higher in 10 of 16
 * alternating starts, against 3 of 16 (#43; a scavenge more after start-up's last full collection).
 */
export function grpcLogsTo(logger: Logger): void {
  const line = (args: unknown[]): string => args.map(String).join(' ');
  const grpcLine = { component: 'grpc' };
  grpc.setLogger({
    error: (...args: unknown[]) => logger.error(grpcLine, line(args)),
    info: (...args: unknown[]) => logger.info(grpcLine, line(args)),
    debug: (...args: unknown[]) => logger.debug(grpcLine, line(args)),
  });
}
