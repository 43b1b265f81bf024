import type { Attributes, BatchObservableResult, Meter, ObservableCounter } from '@opentelemetry/api';
import { METRIC } from './attributes.js';

/** The running totals of one job name and queue: what its counters report at each collection. */
export interface CounterTotals {
  readonly attributes: Attributes;
  completed: number;
  failed: number;
  dead: number;
}

/**
 * `loom.jobs.completed`, `loom.jobs.failed` and `loom.jobs.dead` as observable (asynchronous)
 * counters: the engine adds to plain totals per job name and queue, and the SDK reads them when it
 * collects. A synchronous `Counter.add` per job made the SDK hash the attribute set on every
 * record (a third of the metric cost per job, bench/README.md issue 33 item 3); exporters see the
 * same monotonic sums either way.
 *
 * One set of totals per meter, shared by every engine of the process that uses it: two callbacks
 * observing the same attribute set would each report only their own total, and the SDK keeps the
 * last, so two engines running one job name must add to one total, as they did to one counter.
 */
export class JobCounters {
  private readonly totals = new Map<string, Map<string, CounterTotals>>();

  private constructor(meter: Meter) {
    const completed = meter.createObservableCounter(METRIC.completed, { description: 'Jobs whose completion was stored', unit: '{job}' });
    const failed = meter.createObservableCounter(METRIC.failed, { description: 'Failed attempts (retried or dead)', unit: '{attempt}' });
    const dead = meter.createObservableCounter(METRIC.dead, { description: 'Jobs moved to the dead letters', unit: '{job}' });
    meter.addBatchObservableCallback((result) => this.observe(result, completed, failed, dead), [completed, failed, dead]);
  }

  private static readonly byMeter = new WeakMap<Meter, JobCounters>();

  /** The counters of `meter`: made, and their callback registered, on the first call for it. */
  static of(meter: Meter): JobCounters {
    let counters = JobCounters.byMeter.get(meter);
    if (!counters) JobCounters.byMeter.set(meter, (counters = new JobCounters(meter)));
    return counters;
  }

  /** The totals of job `name` in `queue`, with the attribute set they are reported under. */
  totalsOf(name: string, queue: string, attributes: Attributes): CounterTotals {
    let ofName = this.totals.get(name);
    if (!ofName) this.totals.set(name, (ofName = new Map<string, CounterTotals>()));
    let totals = ofName.get(queue);
    if (!totals) ofName.set(queue, (totals = { attributes, completed: 0, failed: 0, dead: 0 }));
    return totals;
  }

  /** A series appears once it counted something, as a synchronous counter's does on its first add. */
  private observe(result: BatchObservableResult, completed: ObservableCounter, failed: ObservableCounter, dead: ObservableCounter): void {
    for (const ofName of this.totals.values()) {
      for (const totals of ofName.values()) {
        if (totals.completed > 0) result.observe(completed, totals.completed, totals.attributes);
        if (totals.failed > 0) result.observe(failed, totals.failed, totals.attributes);
        if (totals.dead > 0) result.observe(dead, totals.dead, totals.attributes);
      }
    }
  }
}
