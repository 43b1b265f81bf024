import type { Logger } from '@loom/core';

/**
 * SIGINT (Ctrl-C) and SIGTERM run `stop` once, then exit 0 (1 if it failed). A second signal exits
 * at once: jobs still running then are not lost either, they run again when their lease expires.
 * Returns a function that removes the handlers.
 */
export function stopOnSignals(
  stop: (signal: string) => Promise<void>,
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): () => void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, `${signal} again: exiting now; jobs still running are not lost, they run again once their lease expires`);
      exit(130);
      return;
    }
    stopping = true;
    stop(signal).then(
      () => exit(0),
      (err: unknown) => {
        logger.error({ err }, 'graceful stop failed');
        exit(1);
      },
    );
  };
  const onInt = (): void => onSignal('SIGINT');
  const onTerm = (): void => onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
}
