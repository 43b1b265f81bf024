import { describe, expect, it } from '@jest/globals';
import type { LeaseRef } from '@loom/core';
import { at, newJob } from './jobs.js';
import { useShardedEmulator } from './sharded.js';

// Every hot-path command of a job's life reaches one shard when the jobs collection is sharded on
// { queue, partition } (read from the emulator's per-shard routing counts, `loomShardStats`).
// MongoDB 7.0: a findAndModify that mongos cannot target is refused outright, so a claim without
// the shard key fails here before it is even counted.
const cluster = useShardedEmulator(4, '7.0');

interface NsStats {
  ns: string;
  targeted: Record<string, number>;
  broadcast: Record<string, number>;
  shards: Record<string, { targeted: Record<string, number>; broadcast: Record<string, number> }>;
}

/** The routing counts of the jobs collection of `database`. */
function jobsStats(database: string): NsStats {
  const stats = cluster.emulator.shardStats() as { namespaces: NsStats[] };
  return stats.namespaces.find((n) => n.ns === `${database}.loom_jobs`)!;
}

const claim = (now: number, limit = 1, names = ['send']) => ({
  owner: 'w',
  queues: ['default'],
  names,
  limit,
  leaseUntil: at(now + 30_000),
  now: at(now),
});

describe('sharded jobs collection: the hot path targets one shard', () => {
  it('enqueue, claims, heartbeats, completions, retries, steps, sleeps, waits and wake-ups, signals, children, flow permits, dead letters', async () => {
    const { store, database } = await cluster.newStore(8);
    await store.init();
    try {
      cluster.emulator.resetShardStats();
      // Enqueue: plain jobs spread over the partitions, keyed ones by key; a duplicate key is looked up in its partition.
      await store.enqueue(
        Array.from({ length: 24 }, (_, i) => newJob({ payload: { i }, ...(i % 2 === 0 ? { idempotencyKey: `k${i}` } : {}) })),
        { now: at(0) },
      );
      const dup = await store.enqueue([newJob({ idempotencyKey: 'k0' })], { now: at(0) });
      expect(dup[0]!.deduplicated).toBe(true);
      await store.enqueue([newJob({ debounceKey: 'd', runAt: at(0) })], { now: at(0) });
      await store.enqueue([newJob({ debounceKey: 'd', runAt: at(0) })], { now: at(0) });

      // Claims, one job and batches.
      const one = await store.claim(claim(1));
      const batch = await store.claim(claim(1, 10));
      const rest = await store.claim(claim(1, 30));
      const running = [...one, ...batch, ...rest];
      expect(running).toHaveLength(25);
      const lease = (i: number): LeaseRef => ({ jobId: running[i]!.id, token: running[i]!.lease!.token });

      // Heartbeats, alone and batched; steps, progress, signals.
      await store.extendLease(lease(0), at(40_000), at(2));
      await store.heartbeatMany(
        [0, 1, 2, 3].map((i) => ({ lease: lease(i), until: at(45_000) })),
        at(3),
      );
      await store.recordStep(lease(1), { name: 's1', status: 'completed', result: 1, at: at(3) } as never, at(3));
      await store.progress(lease(1), 50, at(3));
      await store.signal(running[2]!.id, { name: 'go', data: 1, now: at(3) });
      await store.consumeSignal(lease(2), { signal: 'go', stepName: 'got', now: at(3) });

      // Completions, alone and batched; a retry, a sleep, a release, a dead letter.
      await store.complete(lease(3), { result: 'ok', now: at(4) });
      await store.completeMany(
        [4, 5, 6, 7].map((i) => ({ lease: lease(i), ...(i % 2 ? { result: i } : {}) })),
        at(4),
      );
      await store.retry(lease(8), { runAt: at(10), error: { attempt: 1, at: at(4), message: 'x' } as never, now: at(4) });
      await store.sleep(lease(9), { runAt: at(10), now: at(4) });
      await store.release(lease(10), at(4));
      await store.deadLetter(lease(11), { reason: 'boom', now: at(4) });

      // A parent with a child: the child stores the parent's route, so waking the parent is targeted.
      const [child] = await store.enqueue([newJob({ name: 'child', parentId: running[12]!.id, payload: { child: true } })], { now: at(5) });
      expect(await store.wait(lease(12), { for: { jobs: [child!.id] }, now: at(5) })).toBe('waiting');
      const [claimedChild] = await store.claim(claim(6, 1, ['child']));
      expect(claimedChild!.id).toBe(child!.id);
      await store.complete({ jobId: child!.id, token: claimedChild!.lease!.token }, { now: at(7) });
      expect(await store.isWaitingFor(running[12]!.id, child!.id)).toBe(true);
      expect(await store.wake(running[12]!.id, at(7))).toBe(true);
      // A wait for a signal, then the signal wakes it.
      expect(await store.wait(lease(13), { for: { signal: 'ping' }, now: at(7) })).toBe('waiting');
      expect(await store.signal(running[13]!.id, { name: 'ping', data: null, now: at(7) })).toBe(true);

      // Flow-control permits: a claim under a global concurrency limit.
      await store.enqueue([newJob({ name: 'limited' }), newJob({ name: 'limited' })], { now: at(8) });
      const limited = await store.claim({ ...claim(9, 5, ['limited']), flow: [{ name: 'limited', globalConcurrency: 1 }] });
      expect(limited).toHaveLength(1);
      await store.complete({ jobId: limited[0]!.id, token: limited[0]!.lease!.token }, { now: at(9) });

      // The jobs put back are claimed again where they are.
      const again = await store.claim(claim(20, 10, ['send', 'limited']));
      expect(again.length).toBeGreaterThan(0);

      const stats = jobsStats(database);
      // The one command that reaches every shard: a short claim's probe for partitions with
      // claimable jobs nobody announced (partition-claims.ts), at most one per claim (8 claims here).
      const { aggregate: probes = 0, ...broadcast } = stats.broadcast;
      expect(broadcast).toEqual({});
      expect(probes).toBeLessThanOrEqual(8);
      // The other collections stay unsharded: every command on them reaches the primary shard alone.
      const all = cluster.emulator.shardStats() as { namespaces: NsStats[] };
      for (const ns of all.namespaces.filter((n) => n.ns.startsWith(`${database}.`) && n.ns !== stats.ns)) expect(ns.broadcast).toEqual({});
      expect(Object.values(stats.targeted).reduce((a, b) => a + b, 0)).toBeGreaterThan(50);
      // The partitions are spread over the four shards.
      expect(Object.keys(stats.shards).filter((s) => Object.keys(stats.shards[s]!.targeted).length > 0)).toHaveLength(4);
    } finally {
      await store.close();
    }
  });
});
