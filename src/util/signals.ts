// Runs a long-lived role until SIGTERM or SIGINT, then its graceful stop, then flushes the log.
import type { Logger } from 'pino';

export async function runUntilSignal(
  logger: Logger,
  what: string,
  stop: () => Promise<void>,
): Promise<void> {
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string): void => {
      logger.info({ signal }, what);
      stop().then(resolve, resolve);
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
  });
  logger.flush();
}
