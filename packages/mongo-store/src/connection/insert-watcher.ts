import type { ChangeStream, Collection, ResumeToken } from 'mongodb';
import type { JobDocument } from '../schema/documents.js';
import type { StoreLogger } from '../options.js';
import type { Deployment } from './deployment.js';

/** What a subscriber hears about: job `id` was enqueued into `queue` (in `partition`, when not 0), due at `runAt`. */
export type InsertListener = (event: { id: string; queue: string; runAt: Date; partition?: number }) => void;

export interface InsertWatcherOptions {
  /** First restart delay after a stream error; doubles up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Watches the jobs collection for inserts with a change stream, so idle workers wake within
 * milliseconds. A stream error the driver does not resume by itself is logged and the stream
 * reopened with backoff, after the last event it delivered (its resume token), so inserts made
 * while it was down are still heard; only when the server no longer has that point in its history
 * does it start from now (the engine keeps polling, so a missed event only costs latency).
 * Timers are unref'd and `stop()` closes everything: a watcher never keeps a process alive.
 */
/** ChangeStreamHistoryLost, InvalidResumeToken. */
const HISTORY_GONE = new Set([286, 260]);

export function watchInserts(jobs: Collection<JobDocument>, listener: InsertListener, logger: StoreLogger, options: InsertWatcherOptions = {}): () => void {
  const minBackoff = options.minBackoffMs ?? 100;
  const maxBackoff = options.maxBackoffMs ?? 30_000;
  let stopped = false;
  let failures = 0;
  let stream: ChangeStream<JobDocument> | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** Where a reopened stream continues (the driver types a token as `unknown`; none yet: undefined). */
  let resumeToken: ResumeToken = undefined;

  const close = (s: ChangeStream<JobDocument> | undefined) => {
    s?.close().catch((err: unknown) => logger.debug({ err }, 'closing a change stream failed (ignored: it is being discarded)'));
  };

  const open = () => {
    timer = undefined;
    if (stopped) return;
    const current = jobs.watch(
      [
        { $match: { operationType: 'insert' } },
        { $project: { operationType: 1, 'fullDocument._id': 1, 'fullDocument.queue': 1, 'fullDocument.runAt': 1, 'fullDocument.partition': 1 } },
      ],
      resumeToken === undefined ? {} : { startAfter: resumeToken },
    );
    stream = current;
    void listen(current);
  };

  // The stream is read as an iterator, not with `on('change')`: in event mode the driver asks for
  // the next event (a getMore) as soon as it emitted one, so the claim the listener starts left
  // after it, 0.3-0.5 ms later on a one-job-at-a-time path (bench/README.md, issue 33 item 6).
  // Here the next event is asked for a turn of the event loop later, once the claim has left.
  const listen = async (current: ChangeStream<JobDocument>) => {
    try {
      while (!stopped && stream === current) {
        const change = await current.next();
        failures = 0;
        resumeToken = current.resumeToken ?? resumeToken;
        if (change.operationType === 'insert') {
          try {
            const { _id, queue, runAt, partition } = change.fullDocument;
            listener(partition === undefined ? { id: _id.toHexString(), queue, runAt } : { id: _id.toHexString(), queue, runAt, partition });
          } catch (err) {
            logger.error({ err }, 'a job-insert listener threw; the change stream goes on');
          }
        }
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } catch (err) {
      failed(current, err);
    }
  };

  /** A stream error the driver did not resume by itself: reopen after backoff, after its last event. */
  const failed = (current: ChangeStream<JobDocument>, err: unknown) => {
    if (stopped || stream !== current) return;
    stream = undefined;
    resumeToken = current.resumeToken ?? resumeToken;
    // The resume point fell out of the server's history (or is not valid): start from now.
    if (HISTORY_GONE.has((err as { code?: unknown }).code as number)) resumeToken = undefined;
    close(current);
    const delay = Math.min(maxBackoff, minBackoff * 2 ** Math.min(failures++, 20));
    logger.warn({ err, retryInMs: delay }, 'the job change stream failed; workers fall back to polling until it reopens');
    timer = setTimeout(open, delay);
    timer.unref();
  };

  open();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    close(stream);
    stream = undefined;
  };
}

/**
 * The store's `subscribe`: a change stream per listener on a replica set; on a standalone none
 * (one debug line), and the engine's polling carries on. `close()` stops every stream.
 */
export class InsertSubscriptions {
  private readonly stops = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly jobs: Collection<JobDocument>,
    private readonly logger: StoreLogger,
    private readonly deployment: () => Promise<Deployment>,
  ) {}

  subscribe(listener: InsertListener): () => void {
    let stop: (() => void) | undefined;
    let unsubscribed = false;
    const unsubscribe = () => {
      unsubscribed = true;
      stop?.();
      this.stops.delete(unsubscribe);
    };
    this.stops.add(unsubscribe);
    this.deployment().then(
      (deployment) => {
        if (unsubscribed || this.closed) return;
        if (!deployment.replicated) {
          this.logger.debug({}, 'change streams need a replica set; workers rely on polling');
          return;
        }
        stop = watchInserts(this.jobs, listener, this.logger);
      },
      (err: unknown) => this.logger.warn({ err }, 'could not reach MongoDB to open the job change stream; workers rely on polling'),
    );
    return unsubscribe;
  }

  close(): void {
    this.closed = true;
    for (const stop of this.stops) stop();
    this.stops.clear();
  }
}
