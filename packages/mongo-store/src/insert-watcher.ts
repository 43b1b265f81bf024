import type { ChangeStream, Collection } from 'mongodb';
import type { JobDocument } from './documents.js';
import type { StoreLogger } from './options.js';

/** What a subscriber hears about: a job was enqueued into `queue`, due at `runAt`. */
export type InsertListener = (event: { queue: string; runAt: Date }) => void;

export interface InsertWatcherOptions {
  /** First restart delay after a stream error; doubles up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Watches the jobs collection for inserts with a change stream, so idle workers wake within
 * milliseconds. A stream error is logged and the stream reopened with backoff; the engine keeps
 * polling meanwhile, so a missed event only costs latency. Timers are unref'd and `stop()` closes
 * everything: a watcher never keeps a process alive.
 */
export function watchInserts(jobs: Collection<JobDocument>, listener: InsertListener, logger: StoreLogger, options: InsertWatcherOptions = {}): () => void {
  const minBackoff = options.minBackoffMs ?? 100;
  const maxBackoff = options.maxBackoffMs ?? 30_000;
  let stopped = false;
  let failures = 0;
  let stream: ChangeStream<JobDocument> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const close = (s: ChangeStream<JobDocument> | undefined) => {
    s?.close().catch((err: unknown) => logger.debug({ err }, 'closing a change stream failed (ignored: it is being discarded)'));
  };

  const open = () => {
    timer = undefined;
    if (stopped) return;
    const current = jobs.watch([
      { $match: { operationType: 'insert' } },
      { $project: { operationType: 1, 'fullDocument.queue': 1, 'fullDocument.runAt': 1 } },
    ]);
    stream = current;
    current.on('change', (change) => {
      failures = 0;
      if (change.operationType !== 'insert') return;
      try {
        listener({ queue: change.fullDocument.queue, runAt: change.fullDocument.runAt });
      } catch (err) {
        logger.error({ err }, 'a job-insert listener threw; the change stream goes on');
      }
    });
    current.on('error', (err) => {
      if (stopped || stream !== current) return;
      stream = undefined;
      close(current);
      const delay = Math.min(maxBackoff, minBackoff * 2 ** Math.min(failures++, 20));
      logger.warn({ err, retryInMs: delay }, 'the job change stream failed; workers fall back to polling until it reopens');
      timer = setTimeout(open, delay);
      timer.unref();
    });
  };

  open();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    close(stream);
    stream = undefined;
  };
}
