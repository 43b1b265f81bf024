import { ObjectId, type Db, type Document } from 'mongodb';
import type { NewJob } from '@loom/core';
import type { MongoStore } from '@loom/mongo-store';

const INSERT_BATCH = 10_000;

/**
 * Fills `db`'s jobs collection with `target` completed jobs like `job`: copies of one the store
 * itself enqueued, claimed and completed (exactly what a busy installation accumulates), loaded in
 * bulk until `target` or the time budget, whichever comes first. Returns how many it loaded.
 */
export async function loadCompletedJobs(store: MongoStore, db: Db, job: NewJob, target: number, budgetMs: number): Promise<number> {
  const now = new Date();
  const [first] = await store.enqueue([job], { now });
  const [claimed] = await store.claim({
    owner: `bench-${process.pid}`,
    queues: [job.queue],
    names: [job.name],
    limit: 1,
    leaseUntil: new Date(now.getTime() + 60_000),
    now,
  });
  if (!claimed || claimed.id !== first!.id) throw new Error('bench: could not claim the template job');
  await store.complete({ jobId: claimed.id, token: claimed.lease!.token }, { now: new Date() });
  const jobs = db.collection('loom_jobs');
  const template = await jobs.findOne({ _id: new ObjectId(claimed.id) });
  if (!template || template.status !== 'completed') throw new Error('bench: the template job is not completed in loom_jobs');
  const start = performance.now();
  let loaded = 1;
  while (loaded < target && performance.now() - start < budgetMs) {
    const n = Math.min(INSERT_BATCH, target - loaded);
    // Distinct creation times, as real jobs have: list pages are ordered by them.
    const docs: Document[] = Array.from({ length: n }, (_, j) => ({
      ...template,
      _id: new ObjectId(),
      createdAt: new Date((template.createdAt as Date).getTime() - (loaded + j)),
      payload: { i: loaded + j },
    }));
    await jobs.insertMany(docs, { ordered: false });
    loaded += n;
  }
  return loaded;
}
