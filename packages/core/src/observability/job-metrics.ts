import type { Attributes, Histogram, Meter } from '@opentelemetry/api';
import type { JobRecord } from '../store/job-record.js';
import { ATTR, METRIC } from './attributes.js';
import { JobCounters, type CounterTotals } from './job-counters.js';
import type { AttemptOutcome } from './telemetry.js';

/** Bucket bounds (ms) for durations and waits: jobs run for milliseconds to hours and may wait as long. */
const MS_BUCKETS = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000];

/** The attribute sets of one job name: built once, since every record would otherwise allocate them. */
interface NameAttributes {
  queue: string;
  base: Attributes;
  byOutcome: Map<AttemptOutcome, Attributes>;
  /** What the name's counters report (shared with other engines on the same meter). */
  totals: CounterTotals;
}

/**
 * The job counters and histograms (see attributes.ts for names). Attributes are the job name and
 * its queue, plus the outcome on `loom.job.duration`. The counters are observable, read from
 * totals at each collection (job-counters.ts); the histograms are recorded per attempt.
 */
export class JobMetrics {
  private readonly counters: JobCounters;
  private readonly duration: Histogram;
  private readonly wait: Histogram;
  private readonly attributes = new Map<string, NameAttributes>();

  constructor(meter: Meter) {
    this.counters = JobCounters.of(meter);
    const advice = { explicitBucketBoundaries: MS_BUCKETS };
    this.duration = meter.createHistogram(METRIC.duration, { description: 'How long an attempt ran, from claim to stored outcome', unit: 'ms', advice });
    this.wait = meter.createHistogram(METRIC.wait, { description: "How late an attempt started: from the job's runAt to its claim", unit: 'ms', advice });
  }

  started(job: JobRecord, waitMs: number): void {
    this.wait.record(Math.max(0, waitMs), this.of(job).base);
  }

  ended(job: JobRecord, outcome: AttemptOutcome, durationMs: number): void {
    const attrs = this.of(job);
    const { totals } = attrs;
    if (outcome === 'completed') totals.completed++;
    if (outcome === 'failed' || outcome === 'dead') totals.failed++;
    if (outcome === 'dead' || outcome === 'expired') totals.dead++;
    if (outcome === 'completed' || outcome === 'failed' || outcome === 'dead' || outcome === 'suspended') {
      let withOutcome = attrs.byOutcome.get(outcome);
      if (!withOutcome) attrs.byOutcome.set(outcome, (withOutcome = { ...attrs.base, [ATTR.outcome]: outcome }));
      this.duration.record(Math.max(0, durationMs), withOutcome);
    }
  }

  private of(job: JobRecord): NameAttributes {
    let attrs = this.attributes.get(job.name);
    if (!attrs || attrs.queue !== job.queue) {
      const base = { [ATTR.jobName]: job.name, [ATTR.destination]: job.queue };
      attrs = { queue: job.queue, base, byOutcome: new Map(), totals: this.counters.totalsOf(job.name, job.queue, base) };
      this.attributes.set(job.name, attrs);
    }
    return attrs;
  }
}
