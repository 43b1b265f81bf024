import type { Loom } from '@loom/core';

/** Per job name: runs that completed, retries scheduled, jobs dead-lettered. */
export interface JobCounts {
  completed: number;
  retried: number;
  dead: number;
}

/** Counts what this instance's workers did, from Loom's events. */
export class JobTally {
  readonly byName = new Map<string, JobCounts>();
  private readonly unsubscribe: Array<() => void>;

  constructor(loom: Loom) {
    this.unsubscribe = [
      loom.on('job:completed', ({ job }) => this.counts(job.name).completed++),
      loom.on('job:retrying', ({ job }) => this.counts(job.name).retried++),
      loom.on('job:dead', ({ job }) => this.counts(job.name).dead++),
    ];
  }

  get total(): JobCounts {
    const total: JobCounts = { completed: 0, retried: 0, dead: 0 };
    for (const c of this.byName.values()) {
      total.completed += c.completed;
      total.retried += c.retried;
      total.dead += c.dead;
    }
    return total;
  }

  of(name: string): JobCounts {
    return this.byName.get(name) ?? { completed: 0, retried: 0, dead: 0 };
  }

  close(): void {
    for (const off of this.unsubscribe) off();
  }

  private counts(name: string): JobCounts {
    let c = this.byName.get(name);
    if (!c) this.byName.set(name, (c = { completed: 0, retried: 0, dead: 0 }));
    return c;
  }
}
