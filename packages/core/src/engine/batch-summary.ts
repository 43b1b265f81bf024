import type { BatchSummary } from '../jobs/job-class.js';
import type { JobStore } from '../store/store.js';
import { BatchNotFoundError } from '../support/errors.js';

/**
 * A batch callback's `ctx.batch`: the batch's counts (frozen when it finished) and its failed
 * members, read from the store before the callback runs. Two reads, once per callback run: never
 * per member.
 */
export async function readBatchSummary(store: JobStore, batchId: string): Promise<BatchSummary> {
  const [batch, failedJobIds] = await Promise.all([store.getBatch(batchId), store.batchFailures(batchId)]);
  if (!batch) throw new BatchNotFoundError(batchId);
  const { id, total, completed, dead, cancelled } = batch;
  return { id, total, completed, dead, cancelled, failedJobIds };
}
