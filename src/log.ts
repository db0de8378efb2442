// The process logger: pino, JSON lines on stderr, level from the configuration.
import { pino, type Logger } from 'pino';

export function createLogger(level: string, name = 'erdma-smcr'): Logger {
  return pino({ name, level, base: { name } }, pino.destination({ dest: 2, sync: false }));
}
