import type { JobStatus, StoreStats } from '../job-record.js';

/** Per-queue, per-status job counts kept up to date on every transition, so stats are O(queues). */
export class StatusCounts {
  readonly #counts = new Map<string, Map<JobStatus, number>>();

  /** Records a job entering (`+1`) or leaving (`-1`) a status. */
  add(queue: string, status: JobStatus, delta: 1 | -1): void {
    let byStatus = this.#counts.get(queue);
    if (!byStatus) this.#counts.set(queue, (byStatus = new Map<JobStatus, number>()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + delta);
  }

  move(queue: string, from: JobStatus, to: JobStatus): void {
    this.add(queue, from, -1);
    this.add(queue, to, 1);
  }

  /** Queues and statuses with no jobs are left out. */
  snapshot(): StoreStats['queues'] {
    const queues: StoreStats['queues'] = {};
    for (const [queue, byStatus] of this.#counts) {
      const counts: Partial<Record<JobStatus, number>> = {};
      for (const [status, n] of byStatus) if (n > 0) counts[status] = n;
      if (Object.keys(counts).length > 0) queues[queue] = counts;
    }
    return queues;
  }
}
