// The process logger: pino, JSON lines on stderr, level from the configuration.
import { pino, type Logger } from 'pino';

/**
 * Lines are written synchronously (pino's default), each as it is logged. The asynchronous mode
 * hands every write to libuv's thread pool: under load that cost the webhook a thread switch for
 * about every second review and some 15 µs of CPU per review (docs/benchmarks.md, "#25"), and a
 * line still in flight when the process dies is lost either way.
 */
export function createLogger(level: string, name = 'erdma-smcr'): Logger {
  return pino({ name, level, base: { name } }, pino.destination({ dest: 2, sync: true }));
}
