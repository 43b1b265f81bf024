import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { JobRecord } from '../store/job-record.js';
import { ATTR, METRIC } from './attributes.js';
import type { AttemptOutcome } from './telemetry.js';

/** Bucket bounds (ms) for durations and waits: jobs run for milliseconds to hours and may wait as long. */
const MS_BUCKETS = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000];

/** The attribute sets of one job name: built once, since every record would otherwise allocate them. */
interface NameAttributes {
  queue: string;
  base: Attributes;
  byOutcome: Map<AttemptOutcome, Attributes>;
}

/**
 * The job counters and histograms (see attributes.ts for names). Attributes are the job name and
 * its queue, plus the outcome on `loom.job.duration`.
 */
export class JobMetrics {
  private readonly completed: Counter;
  private readonly failed: Counter;
  private readonly dead: Counter;
  private readonly duration: Histogram;
  private readonly wait: Histogram;
  private readonly attributes = new Map<string, NameAttributes>();

  constructor(meter: Meter) {
    this.completed = meter.createCounter(METRIC.completed, { description: 'Jobs whose completion was stored', unit: '{job}' });
    this.failed = meter.createCounter(METRIC.failed, { description: 'Failed attempts (retried or dead)', unit: '{attempt}' });
    this.dead = meter.createCounter(METRIC.dead, { description: 'Jobs moved to the dead letters', unit: '{job}' });
    const advice = { explicitBucketBoundaries: MS_BUCKETS };
    this.duration = meter.createHistogram(METRIC.duration, { description: 'How long an attempt ran, from claim to stored outcome', unit: 'ms', advice });
    this.wait = meter.createHistogram(METRIC.wait, { description: "How late an attempt started: from the job's runAt to its claim", unit: 'ms', advice });
  }

  started(job: JobRecord, waitMs: number): void {
    this.wait.record(Math.max(0, waitMs), this.of(job).base);
  }

  ended(job: JobRecord, outcome: AttemptOutcome, durationMs: number): void {
    const attrs = this.of(job);
    if (outcome === 'completed') this.completed.add(1, attrs.base);
    if (outcome === 'failed' || outcome === 'dead') this.failed.add(1, attrs.base);
    if (outcome === 'dead' || outcome === 'expired') this.dead.add(1, attrs.base);
    if (outcome === 'completed' || outcome === 'failed' || outcome === 'dead' || outcome === 'suspended') {
      let withOutcome = attrs.byOutcome.get(outcome);
      if (!withOutcome) attrs.byOutcome.set(outcome, (withOutcome = { ...attrs.base, [ATTR.outcome]: outcome }));
      this.duration.record(Math.max(0, durationMs), withOutcome);
    }
  }

  private of(job: JobRecord): NameAttributes {
    let attrs = this.attributes.get(job.name);
    if (!attrs || attrs.queue !== job.queue) {
      attrs = { queue: job.queue, base: { [ATTR.jobName]: job.name, [ATTR.destination]: job.queue }, byOutcome: new Map() };
      this.attributes.set(job.name, attrs);
    }
    return attrs;
  }
}
