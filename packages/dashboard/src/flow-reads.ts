import {
  BATCH_CALLBACKS,
  batchCallbackKey,
  type BatchCallbackOn,
  type BatchRecord,
  type JobRecord,
  type JobStore,
  type JobSummary,
  type Jobs,
} from '@loom/core';

/** How many of a job's dependencies, or of its dependents (the newest), a job page lists. */
export const RELATIONS_SHOWN = 50;
/** How many failed members a batch page lists. */
export const FAILURES_SHOWN = 50;

/** One job a page links to: its record, or null when it was removed. */
export interface RelatedJob {
  id: string;
  job: JobRecord | null;
}

/** What a job page shows of a job's flow: its dependencies, its newest dependents and its batch. */
export interface JobRelations {
  dependsOn: RelatedJob[];
  dependents: RelatedJob[];
  /** The batch it is a member of, or whose callback it is (null when the batch is gone). */
  batch?: BatchRecord | null;
}

/** A batch as its page shows it: its counts, its first failed members and the callbacks enqueued so far. */
export interface BatchView {
  batch: BatchRecord;
  /** The first {@link FAILURES_SHOWN} ids of members that died or were cancelled. */
  failed: string[];
  /** How many members died or were cancelled in all. */
  failedCount: number;
  callbacks: { on: BatchCallbackOn; job: JobSummary }[];
}

/**
 * The dashboard's read-only view of flows (dependencies and batches): `loom.batches` needs an
 * engine's enqueuer to create batches, so pages read a batch from the store here, and jobs through
 * core's {@link Jobs} operations. Nothing here writes.
 */
export class FlowReads {
  constructor(private readonly deps: { store: JobStore; jobs: Jobs }) {}

  /** A job's dependencies (the first {@link RELATIONS_SHOWN}), its newest dependents and its batch. */
  async jobRelations(job: JobRecord): Promise<JobRelations> {
    const batchId = job.batchId ?? job.batchCallback?.batchId;
    const [dependsOn, dependents, batch] = await Promise.all([
      this.related((job.dependsOn ?? []).slice(0, RELATIONS_SHOWN)),
      this.related((job.dependents ?? []).slice(-RELATIONS_SHOWN).reverse()),
      batchId === undefined ? undefined : this.deps.store.getBatch(batchId),
    ]);
    return batch === undefined ? { dependsOn, dependents } : { dependsOn, dependents, batch };
  }

  /** A batch's page data, or null when no batch has this id. */
  async batch(id: string): Promise<BatchView | null> {
    const { store, jobs } = this.deps;
    const [batch, failed] = await Promise.all([store.getBatch(id), store.batchFailures(id)]);
    if (!batch) return null;
    const callbacks = await Promise.all(
      BATCH_CALLBACKS.map(async (on) => ({ on, job: (await jobs.list({ idempotencyKey: batchCallbackKey(id, on), limit: 1 })).jobs[0] })),
    );
    return {
      batch,
      failed: failed.slice(0, FAILURES_SHOWN),
      failedCount: failed.length,
      callbacks: callbacks.filter((c): c is { on: BatchCallbackOn; job: JobSummary } => c.job !== undefined),
    };
  }

  private related(ids: string[]): Promise<RelatedJob[]> {
    return Promise.all(ids.map(async (id) => ({ id, job: await this.deps.jobs.get(id) })));
  }
}
