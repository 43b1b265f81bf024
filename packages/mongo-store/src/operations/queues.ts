import type { Collection, Document, Filter } from 'mongodb';
import { emptyQueueCounts, type JobStatus, type QueueSummary, type StoreStats } from '@loom/core';
import { requireDate, requireString } from '../arguments.js';
import type { StoreCollections } from '../connection/collections.js';
import type { JobDocument } from '../schema/documents.js';
import { DEAD_LETTER_INDEX, JOB_LIST_INDEX, SLEEPING_INDEX } from '../schema/indexes.js';
import { isDuplicateKey, StoreArgumentError } from '../store-errors.js';
import type { CompletedCounts } from './completed-counts.js';

/** The statuses counted from the jobs themselves: all but `completed` (see {@link CompletedCounts}) and `dead` (dead letters). */
const COUNTED_STATUSES = ['queued', 'running', 'waiting', 'cancelled'] as const satisfies readonly JobStatus[];

/** A safety bound on the queues one listing walks (a store has a handful, rarely hundreds). */
const MAX_QUEUES = 10_000;

/**
 * The distinct queue names of a collection by a skip scan of an index that starts with `queue`:
 * one `limit 1` probe per queue, so it costs O(queues · log n), never a pass over the documents.
 */
async function queueNames<T extends Document>(collection: Collection<T>, hint: string): Promise<string[]> {
  const names: string[] = [];
  let last: string | undefined;
  while (names.length < MAX_QUEUES) {
    // `$gte` the least string after `last` (itself plus NUL) says `$gt last`, and makes the range
    // start past every key of `last` even on a server that treats a `$gt` bound as inclusive and
    // then tests each key (the emulator did: the probe walked the whole previous queue).
    const filter: Document = last === undefined ? {} : { queue: { $gte: `${last}\u0000` } };
    const doc = await collection.findOne<{ queue: string }>(filter as Filter<T>, { sort: { queue: 1 }, projection: { _id: 0, queue: 1 }, hint });
    if (!doc) break;
    names.push(doc.queue);
    last = doc.queue;
  }
  return names;
}

/**
 * Queue controls (pause/resume, persisted in their own small collection) and the per-queue counts
 * of `stats` and `listQueues`: each status but `completed` answered by its index range in one
 * queue, `completed` by counters ({@link CompletedCounts}), so their cost does not grow with the
 * completed jobs kept.
 */
export class QueueRepository {
  constructor(
    private readonly collections: StoreCollections,
    private readonly completed: CompletedCounts,
  ) {}

  async setPaused(queue: string, paused: boolean, now: Date): Promise<void> {
    const _id = requireString(queue, 'queue name');
    if (_id === '') throw new StoreArgumentError('queue name must not be empty');
    if (typeof paused !== 'boolean') throw new StoreArgumentError('paused must be a boolean');
    const write = () => this.collections.queues.updateOne({ _id }, { $set: { paused, updatedAt: requireDate(now, 'now') } }, { upsert: true });
    try {
      await write();
    } catch (err) {
      // Two processes creating the same queue's record at once: the loser's write now updates it.
      if (!isDuplicateKey(err)) throw err;
      await write();
    }
  }

  async paused(): Promise<string[]> {
    // The queues collection holds one small document per queue ever paused: no index needed.
    const docs = await this.collections.queues.find({ paused: true }, { projection: { _id: 1 }, sort: { _id: 1 } }).toArray();
    return docs.map((d) => d._id);
  }

  /**
   * Jobs per status in one queue (live jobs only): each status but `completed` counted exactly on
   * its own range of the queue's list index (so completed jobs, however many, are never scanned),
   * `completed` from the counters (`completed` here, from {@link CompletedCounts.perQueue}).
   */
  private async liveCounts(queue: string, completed: Map<string, number>): Promise<Partial<Record<JobStatus, number>>> {
    const counts = await Promise.all(
      COUNTED_STATUSES.map((status) => this.collections.jobs.countDocuments({ queue: { $eq: queue }, status }, { hint: JOB_LIST_INDEX.queue })),
    );
    const live: Partial<Record<JobStatus, number>> = {};
    COUNTED_STATUSES.forEach((status, i) => {
      if (counts[i]! > 0) live[status] = counts[i]!;
    });
    const done = completed.get(queue);
    if (done !== undefined) live.completed = done;
    return live;
  }

  private deadCount(queue: string): Promise<number> {
    return this.collections.deadLetters.countDocuments({ queue: { $eq: queue } }, { hint: DEAD_LETTER_INDEX.queueDied });
  }

  async stats(): Promise<StoreStats> {
    const [liveQueues, deadQueues, completed] = await Promise.all([
      queueNames(this.collections.jobs, JOB_LIST_INDEX.queue),
      queueNames(this.collections.deadLetters, DEAD_LETTER_INDEX.queueDied),
      this.completed.perQueue(),
    ]);
    const [counts, dead] = await Promise.all([
      Promise.all(liveQueues.map((q) => this.liveCounts(q, completed))),
      Promise.all(deadQueues.map((q) => this.deadCount(q))),
    ]);
    const queues: StoreStats['queues'] = {};
    liveQueues.forEach((q, i) => (queues[q] = counts[i]));
    return { queues, deadLetters: dead.reduce((a, b) => a + b, 0) };
  }

  /** Queued jobs of `queue` asleep at `now`: a range of the sleeping index. */
  private sleeping(queue: string, now: Date): Promise<number> {
    return this.collections.jobs.countDocuments({ queue: { $eq: queue }, status: 'queued', sleepUntil: { $gt: now } }, { hint: SLEEPING_INDEX });
  }

  async list(now?: Date): Promise<QueueSummary[]> {
    if (now !== undefined) requireDate(now, 'listQueues now');
    const { jobs, deadLetters } = this.collections;
    const [liveQueues, deadQueues, controls, completed] = await Promise.all([
      queueNames(jobs, JOB_LIST_INDEX.queue),
      queueNames(deadLetters, DEAD_LETTER_INDEX.queueDied),
      this.collections.queues.find({}, { projection: { _id: 1, paused: 1 } }).toArray(),
      this.completed.perQueue(),
    ]);
    const paused = new Set(controls.filter((c) => c.paused).map((c) => c._id));
    const names = [...new Set([...liveQueues, ...deadQueues, ...controls.map((c) => c._id)])].sort();
    return Promise.all(
      names.map(async (name): Promise<QueueSummary> => {
        const [live, dead, oldest, sleeping] = await Promise.all([
          liveQueues.includes(name) ? this.liveCounts(name, completed) : {},
          deadQueues.includes(name) ? this.deadCount(name) : 0,
          liveQueues.includes(name)
            ? jobs.findOne<Pick<JobDocument, 'createdAt'>>(
                { queue: { $eq: name }, status: 'queued' },
                { sort: { createdAt: 1, _id: 1 }, projection: { _id: 0, createdAt: 1 }, hint: JOB_LIST_INDEX.queue },
              )
            : null,
          now === undefined ? undefined : liveQueues.includes(name) ? this.sleeping(name, now) : 0,
        ]);
        const summary: QueueSummary = { name, paused: paused.has(name), counts: { ...emptyQueueCounts(), ...live, dead } };
        if (sleeping !== undefined) summary.sleeping = sleeping;
        if (oldest) summary.oldestQueuedAt = oldest.createdAt;
        return summary;
      }),
    );
  }
}
