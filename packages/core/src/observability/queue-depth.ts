import type { Meter, ObservableCallback, ObservableGauge } from '@opentelemetry/api';
import type { StoreStats } from '../store/job-record.js';
import type { JobStore } from '../store/store.js';
import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import { withDeadline } from '../support/store-deadline.js';
import { ATTR, METRIC } from './attributes.js';

/**
 * How long a collection waits for `store.stats()`: the OpenTelemetry SDK's default export timeout
 * (a periodic reader gives the whole collection no longer).
 */
const STATS_DEADLINE_MS = 30_000;

/**
 * The `loom.queue.depth` observable gauge: jobs per queue and status, read with one `store.stats()`
 * (one aggregation) per collection. Readers collecting at the same moment share that read.
 */
export class QueueDepthGauge {
  private readonly gauge: ObservableGauge;
  private readonly callback: ObservableCallback = (result) =>
    this.read().then(
      (stats) => {
        for (const [queue, counts] of Object.entries(stats.queues)) {
          for (const [status, n] of Object.entries(counts)) {
            if (n !== undefined) result.observe(n, { [ATTR.destination]: queue, [ATTR.status]: status });
          }
        }
        // Dead letters are counted apart from their queues (MongoStore keeps them in a collection of their own).
        result.observe(stats.deadLetters, { [ATTR.status]: 'dead' });
      },
      (err: unknown) =>
        this.logger.warn(
          { err },
          `Could not read queue depths for the ${METRIC.depth} metric (store.stats failed or did not answer); this collection reports none`,
        ),
    );
  private reading: Promise<StoreStats> | undefined;

  constructor(
    meter: Meter,
    private readonly store: JobStore,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {
    this.gauge = meter.createObservableGauge(METRIC.depth, { description: 'Jobs per queue and status', unit: '{job}' });
    this.gauge.addCallback(this.callback);
  }

  /** Stops reporting: this engine's store is no longer read. */
  close(): void {
    this.gauge.removeCallback(this.callback);
  }

  private read(): Promise<StoreStats> {
    // Bounded: a read that never answered was shared with every later collection, and the gauge
    // reported nothing again.
    return (this.reading ??= withDeadline(this.clock, 'stats', STATS_DEADLINE_MS, this.store.stats()).finally(() => (this.reading = undefined)));
  }
}
