import { describe, expect, it } from '@jest/globals';
import { keyPartition } from '../src/partitions/partitions.js';
import { at, newJob } from './jobs.js';
import { useShardedEmulator } from './sharded.js';

// Order on a partitioned queue (README, "What partitions change"): priority, then runAt, then
// enqueue order hold within a partition. A parent's keyless children in one queue share one
// partition (the one its id picks), so they come out in that order, one claim at a time, while
// jobs of the other partitions are claimed around them.
const cluster = useShardedEmulator(4, '7.0');

const claimOne = async (store: Awaited<ReturnType<typeof cluster.newStore>>['store'], names: string[], now: number) =>
  (await store.claim({ owner: 'w', queues: ['default'], names, limit: 1, leaseUntil: at(now + 30_000), now: at(now) }))[0];

describe('partitioned queue: order within a partition', () => {
  it("a parent's children share a partition and are claimed by priority, then runAt, then enqueue order", async () => {
    const { store, database } = await cluster.newStore(8);
    await store.init();
    try {
      const [parent] = await store.enqueue([newJob({ name: 'parent' })], { now: at(0) });
      const kid = (priority: number, runAt: number) => newJob({ name: 'kid', parentId: parent!.id, priority, runAt: at(runAt) });
      const [low, fifo1, fifo2, earlier, high, negative] = await store.enqueue(
        [kid(0, -5_000), kid(5, -1_000), kid(5, -1_000), kid(5, -2_000), kid(10, 0), kid(-1, -9_000)],
        { now: at(1) },
      );
      // Other jobs spread over every partition, claimed in the same claims.
      await store.enqueue(
        Array.from({ length: 16 }, (_, i) => newJob({ name: 'other', priority: 20, payload: { i } })),
        { now: at(1) },
      );
      const order: string[] = [];
      for (let i = 0; i < 40 && order.length < 6; i++) {
        const job = await claimOne(store, ['kid', 'other'], 10);
        if (job?.name === 'kid') order.push(job.id);
      }
      expect(order).toEqual([high, earlier, fifo1, fifo2, low, negative].map((r) => r!.id));
      // They were all in one partition: the one the parent's id picks.
      const docs = await cluster.client.db(database).collection('loom_jobs').find({ name: 'kid' }).toArray();
      expect(new Set(docs.map((d) => (d.partition as number | undefined) ?? 0))).toEqual(new Set([keyPartition(parent!.id, 8)]));
    } finally {
      await store.close();
    }
  });
});
