import { median } from './stats.js';

/** Engine keys of the results: Loom on MongoStore, Agenda 6, Loom on MemoryStore, BullMQ on Redis. */
export type EngineKey = 'loom' | 'agenda' | 'loom-memory' | 'bullmq';

/** Per engine and metric, the value of every run; medians on demand. */
export class Collector {
  private readonly samples = new Map<EngineKey, Map<string, number[]>>();
  readonly notes: string[] = [];
  /** Labels of the scenarios this run measured (their notes replace an earlier run's). */
  readonly measured = new Set<string>();
  /** Engines this run could not measure, with the reason (BullMQ without redis-server). */
  readonly skipped: Partial<Record<EngineKey, string>> = {};
  /** The redis-server version BullMQ ran on, when it ran. */
  redisVersion: string | undefined;

  add(engine: EngineKey, metrics: Record<string, number>, prefix = ''): void {
    let byMetric = this.samples.get(engine);
    if (!byMetric) this.samples.set(engine, (byMetric = new Map<string, number[]>()));
    for (const [name, value] of Object.entries(metrics)) {
      const key = prefixed(prefix, name);
      let list = byMetric.get(key);
      if (!list) byMetric.set(key, (list = []));
      list.push(value);
    }
  }

  /**
   * Takes the samples of an earlier results file for every figure this run did not measure (a
   * benchmark split in parts: a long group run earlier, the rest later).
   */
  mergeEarlier(samples: Record<string, Record<string, number[]>>): void {
    for (const [engine, byMetric] of Object.entries(samples)) {
      for (const [metric, values] of Object.entries(byMetric)) {
        let mine = this.samples.get(engine as EngineKey);
        if (!mine) this.samples.set(engine as EngineKey, (mine = new Map<string, number[]>()));
        if (!mine.has(metric)) mine.set(metric, [...values]);
      }
    }
  }

  /** engine → metric → median of its runs. */
  medians(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const [engine, byMetric] of this.samples) out[engine] = Object.fromEntries([...byMetric].map(([k, v]) => [k, median(v)]));
    return out;
  }

  /** engine → metric → every run's value. */
  all(): Record<string, Record<string, number[]>> {
    const out: Record<string, Record<string, number[]>> = {};
    for (const [engine, byMetric] of this.samples) out[engine] = Object.fromEntries(byMetric);
    return out;
  }
}

/** `prefixed('batched', 'throughputJobsPerSec')` is `batchedThroughputJobsPerSec`. */
export function prefixed(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}${name[0]!.toUpperCase()}${name.slice(1)}`;
}
