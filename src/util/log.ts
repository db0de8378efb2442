// The process logger: pino, JSON lines on stderr, level from the configuration.
import { pino, type Logger } from 'pino';

/**
 * Lines are written synchronously (pino's default), each before the call that logs it returns,
 * so none waits in memory to be lost if the process dies. The asynchronous mode handed every
 * write to libuv's thread pool: under load that cost the webhook a thread switch for about every
 * second review and some 15 µs of CPU per review (docs/benchmarks.md, "#25").
 */
export function createLogger(level: string, name = 'erdma-smcr'): Logger {
  return pino({ name, level, base: { name } }, pino.destination({ dest: 2, sync: true }));
}
