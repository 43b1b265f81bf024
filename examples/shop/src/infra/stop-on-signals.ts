import type { Logger } from '@loom/core';

/**
 * SIGINT (Ctrl-C) and SIGTERM run `stop` once, then exit 0 (1 if it failed). A second signal exits
 * at once: jobs still running then are not lost either, they run again when their lease expires.
 */
export function stopOnSignals(stop: (signal: string) => Promise<void>, logger: Logger): void {
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) {
        logger.warn({ signal }, `${signal} again: exiting now; jobs still running are not lost, they run again once their lease expires`);
        process.exit(130);
      }
      stopping = true;
      stop(signal).then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'graceful stop failed');
          process.exit(1);
        },
      );
    });
  }
}
