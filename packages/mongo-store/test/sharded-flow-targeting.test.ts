import { describe, expect, it } from '@jest/globals';
import { waitTokenSignal, type JobRecord, type LeaseRef } from '@loom/core';
import { MongoStore } from '../src/index.js';
import { quietLogger } from './fixture.js';
import { at, newJob } from './jobs.js';
import { SHARDED_QUEUES, useShardedEmulator } from './sharded.js';

// The flow features on partitioned queues: batches, dependencies, wait tokens and a fan-in's child
// lookups. Every command they send reaches one shard (read from the emulator's per-shard routing
// counts), also when the process that settles them is not the one that enqueued the jobs: a peer
// store, which has seen none of their routes. MongoDB 7.0: mongos refuses an untargetable findAndModify.
const cluster = useShardedEmulator(4, '7.0');

interface NsStats {
  ns: string;
  broadcast: Record<string, number>;
}

const claim = (now: number, limit: number, names: string[]) => ({ owner: 'w', queues: ['default'], names, limit, leaseUntil: at(now + 30_000), now: at(now) });
const leaseOf = (job: JobRecord): LeaseRef => ({ jobId: job.id, token: job.lease!.token });

describe('sharded jobs collection: batches, dependencies, wait tokens and child lookups target one shard', () => {
  it('sends no broadcast command to any collection of the store, phase by phase', async () => {
    const { store, database } = await cluster.newStore(8);
    await store.init();
    const partitions = Object.fromEntries(SHARDED_QUEUES.map((q) => [q, 8]));
    const peer = new MongoStore({ client: cluster.client, database, logger: quietLogger, partitions });
    await peer.init();
    /** Per phase, the broadcast commands of each of the store's collections (a claim's probe aside). */
    const broadcasts: Record<string, Record<string, Record<string, number>>> = {};
    const phase = async (name: string, fn: () => Promise<void>): Promise<void> => {
      cluster.emulator.resetShardStats();
      await fn();
      const stats = cluster.emulator.shardStats() as { namespaces: NsStats[] };
      const found: Record<string, Record<string, number>> = {};
      for (const n of stats.namespaces.filter((x) => x.ns.startsWith(`${database}.`))) {
        // A claim's probe for unannounced work (one aggregate on the jobs) is the one command meant to reach every shard.
        const { aggregate, ...rest } = n.broadcast;
        const counted = n.ns.endsWith('.loom_jobs') || aggregate === undefined ? rest : n.broadcast;
        if (Object.keys(counted).length > 0) found[n.ns.slice(database.length + 1)] = counted;
      }
      broadcasts[name] = found;
    };
    try {
      await phase('batch', async () => {
        // Members spread over the partitions, claimed and completed by the peer; each end counts on the batch.
        const batch = await store.createBatch(
          { jobs: Array.from({ length: 8 }, (_, i) => newJob({ name: 'member', payload: { i } })), callbacks: { complete: newJob({ name: 'after' }) } },
          { now: at(0) },
        );
        const members = await peer.claim(claim(1, 8, ['member']));
        expect(members).toHaveLength(8);
        for (const m of members) await peer.complete(leaseOf(m), { now: at(2) });
        expect(await store.getBatch(batch.id)).toMatchObject({ completed: 8, pending: 0 });
        expect(await peer.claim(claim(2, 1, ['after']))).toHaveLength(1);
      });
      await phase('dependencies', async () => {
        // b and c depend on a; a completes in the peer, which settles them.
        const [a] = await store.enqueue([newJob({ name: 'dep-a' })], { now: at(3) });
        await store.enqueue([newJob({ name: 'dep-b', dependsOn: [a!.id] }), newJob({ name: 'dep-c', dependsOn: [a!.id] })], { now: at(3) });
        const [claimedA] = await peer.claim(claim(4, 1, ['dep-a']));
        await peer.complete(leaseOf(claimedA!), { now: at(5) });
        expect(await peer.settleDependents({ now: at(5), jobIds: [a!.id] })).toBe(1);
        expect(await peer.claim(claim(6, 5, ['dep-b', 'dep-c']))).toHaveLength(2);
      });
      await phase('wait token', async () => {
        // Made by the run, settled by another process (an HTTP endpoint's).
        await store.enqueue([newJob({ name: 'waiter' })], { now: at(7) });
        const [waiter] = await store.claim(claim(8, 1, ['waiter']));
        const token = { id: 'tok-1', jobId: waiter!.id, status: 'pending' as const, createdAt: at(8) };
        await store.createWaitToken(leaseOf(waiter!), token, at(8));
        expect(await store.wait(leaseOf(waiter!), { for: { signal: waitTokenSignal(token.id) }, now: at(8) })).toBe('waiting');
        expect((await peer.settleWaitToken(token.id, { settlement: { status: 'completed', output: 1 }, now: at(9) }))?.settled).toBe(true);
        expect((await peer.getJob(waiter!.id))?.status).toBe('queued');
      });
      await phase('children', async () => {
        // A fan-in: children enqueued by the parent's process, finished by the peer, which looks for an unfinished sibling.
        await store.enqueue([newJob({ name: 'parent' })], { now: at(10) });
        const [parent] = await store.claim(claim(11, 1, ['parent']));
        await store.enqueue([newJob({ name: 'kid', parentId: parent!.id }), newJob({ name: 'kid', parentId: parent!.id })], { now: at(11) });
        const kids = await peer.claim(claim(12, 2, ['kid']));
        expect(kids).toHaveLength(2);
        await peer.complete(leaseOf(kids[0]!), { now: at(13) });
        expect(await peer.findActiveChild(parent!.id)).toBe(kids[1]!.id);
        await peer.complete(leaseOf(kids[1]!), { now: at(14) });
        expect(await peer.findActiveChild(parent!.id)).toBeNull();
      });
      expect(broadcasts).toEqual({ batch: {}, dependencies: {}, 'wait token': {}, children: {} });
    } finally {
      await peer.close();
      await store.close();
    }
  });
});
