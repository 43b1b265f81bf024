/// <reference types="jest" />
import { LoomError, type JobStore, type NewJob } from '@loom/core';
import { at, claimJobs, claimOne, enqueueOne, mustGet, newJob, type ConformanceContext } from './harness.js';

/** Enqueues `overrides` depending on `dependsOn`; returns its id. */
async function enqueueDependent(store: JobStore, dependsOn: string[], overrides: Partial<NewJob> = {}, now = at(0)): Promise<string> {
  const [result] = await store.enqueue([newJob({ name: 'dependent', dependsOn, ...overrides })], { now });
  return result.id;
}

/** Claims the job `name` (which must be the only due one of that name) and returns its lease. */
async function claimByName(store: JobStore, name: string, now = at(0)) {
  return (await claimOne(store, { names: [name], now })).lease;
}

async function expectInvalidDependencies(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(LoomError.is(error, 'INVALID_DEPENDENCIES')).toBe(true);
}

/** How many jobs the store holds, every status. */
async function jobCount(store: JobStore): Promise<number> {
  const stats = await store.stats();
  return Object.values(stats.queues).reduce((sum, counts) => sum + Object.values(counts).reduce((a, b) => a + (b ?? 0), 0), 0) + stats.deadLetters;
}

export function describeDependencies(ctx: ConformanceContext, options: { supported: boolean }): void {
  if (!options.supported) {
    describe('dependencies (refused: the store has no transactions)', () => {
      it('refuses an enqueue with dependencies and stores nothing', async () => {
        const { store } = ctx;
        const a = await enqueueOne(store, { name: 'dep-a' });
        const before = await jobCount(store);
        await expect(store.enqueue([newJob({ dependsOn: [a] })], { now: at(1) })).rejects.toBeInstanceOf(LoomError);
        await expect(store.enqueue([newJob(), newJob({ dependsOnBatch: [0] })], { now: at(1) })).rejects.toBeInstanceOf(LoomError);
        expect(await jobCount(store)).toBe(before);
        expect(await store.settleDependents({ now: at(2) })).toBe(0);
      });
    });
    return;
  }
  describe('dependencies (dependsOn, settleDependents)', () => {
    it('stores a job with unfinished dependencies waiting for them, never claimable, and links it to them', async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      const b = await enqueueOne(store, { name: 'dep-b' });
      const id = await enqueueDependent(store, [a, b], { onDependencyFailure: 'cancel' });
      expect(await mustGet(store, id)).toMatchObject({
        status: 'waiting',
        attempt: 0,
        waitingFor: { dependencies: [a, b] },
        dependsOn: [a, b],
        onDependencyFailure: 'cancel',
      });
      expect((await mustGet(store, a)).dependents).toEqual([id]);
      expect((await mustGet(store, b)).dependents).toEqual([id]);
      expect(await claimJobs(store, { names: ['dependent'], now: at(10_000_000) })).toEqual([]);
      expect(await store.wake(id, at(1))).toBe(false);
      expect((await mustGet(store, id)).status).toBe('waiting');
    });

    it('becomes queued at the settle after its last dependency completed, not before; a settle twice counts once', async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      const b = await enqueueOne(store, { name: 'dep-b' });
      const id = await enqueueDependent(store, [a, b]);
      await store.complete(await claimByName(store, 'dep-a'), { result: 'A', now: at(5) });
      expect(await store.settleDependents({ now: at(6), jobIds: [a] })).toBe(1);
      expect(await store.settleDependents({ now: at(6), jobIds: [a] })).toBe(0);
      expect(await mustGet(store, id)).toMatchObject({ status: 'waiting', waitingFor: { dependencies: [b] } });
      await store.complete(await claimByName(store, 'dep-b'), { result: 'B', now: at(7) });
      await store.settleDependents({ now: at(8), jobIds: [b] });
      const job = await mustGet(store, id);
      expect(job).toMatchObject({ status: 'queued', runAt: at(8), attempt: 0 });
      expect(job.waitingFor).toBeUndefined();
      expect(idsOfClaim(await claimJobs(store, { names: ['dependent'], now: at(8) }))).toEqual([id]);
    });

    it('settles, without ids, the finished jobs whose dependents were left unsettled (a crash after the finish)', async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      const id = await enqueueDependent(store, [a]);
      await store.complete(await claimByName(store, 'dep-a'), { now: at(5) });
      expect(await store.settleDependents({ now: at(6) })).toBe(1);
      expect((await mustGet(store, id)).status).toBe('queued');
      expect(await store.settleDependents({ now: at(7) })).toBe(0);
    });

    it('is queued at once when every dependency has completed', async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      await store.complete(await claimByName(store, 'dep-a'), { now: at(1) });
      const id = await enqueueDependent(store, [a], {}, at(2));
      expect(await mustGet(store, id)).toMatchObject({ status: 'queued', dependsOn: [a] });
      expect((await mustGet(store, a)).dependents).toEqual([id]);
    });

    it('refuses an unknown dependency id with INVALID_DEPENDENCIES and stores nothing, not even the valid jobs of the batch', async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      const before = await jobCount(store);
      await expectInvalidDependencies(store.enqueue([newJob({ name: 'ok' }), newJob({ dependsOn: [a, '000000000000000000000000'] })], { now: at(1) }));
      await expectInvalidDependencies(store.enqueue([newJob({ dependsOn: ['no-such-job'] })], { now: at(1) }));
      expect(await jobCount(store)).toBe(before);
      expect((await mustGet(store, a)).dependents).toBeUndefined();
    });

    it('stores a DAG given by batch positions in one call; a cycle is refused and nothing stored', async () => {
      const { store } = ctx;
      const results = await store.enqueue(
        [
          newJob({ name: 'prices' }),
          newJob({ name: 'rates' }),
          newJob({ name: 'report', dependsOnBatch: [0, 1] }),
          newJob({ name: 'mail', dependsOnBatch: [2] }),
        ],
        { now: at(0) },
      );
      const [prices, rates, report, mail] = results.map((r) => r.id);
      expect(await mustGet(store, report)).toMatchObject({ status: 'waiting', dependsOn: [prices, rates], waitingFor: { dependencies: [prices, rates] } });
      expect(await mustGet(store, mail)).toMatchObject({ status: 'waiting', dependsOn: [report] });
      expect((await mustGet(store, prices)).dependents).toEqual([report]);
      const before = await jobCount(store);
      await expectInvalidDependencies(
        store.enqueue([newJob({ name: 'x', dependsOnBatch: [2] }), newJob({ name: 'y', dependsOnBatch: [0] }), newJob({ name: 'z', dependsOnBatch: [1] })], {
          now: at(1),
        }),
      );
      await expectInvalidDependencies(store.enqueue([newJob({ name: 'self', dependsOnBatch: [0] })], { now: at(1) }));
      await expectInvalidDependencies(store.enqueue([newJob({ name: 'out', dependsOnBatch: [3] })], { now: at(1) }));
      expect(await jobCount(store)).toBe(before);
    });

    it("applies onDependencyFailure when a dependency dies: 'fail' dead-letters (DEPENDENCY_FAILED), 'cancel' cancels, 'run' runs", async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      const failed = await enqueueDependent(store, [a], { name: 'fails' });
      const cancelled = await enqueueDependent(store, [a], { name: 'cancels', onDependencyFailure: 'cancel' });
      const runs = await enqueueDependent(store, [a], { name: 'runs', onDependencyFailure: 'run' });
      await store.deadLetter(await claimByName(store, 'dep-a'), { reason: 'broken', now: at(5) });
      await store.settleDependents({ now: at(6), jobIds: [a] });
      const dead = await mustGet(store, failed);
      expect(dead).toMatchObject({ status: 'dead' });
      expect(dead.deadReason).toContain('DEPENDENCY_FAILED');
      expect(dead.errors.at(-1)?.code).toBe('DEPENDENCY_FAILED');
      expect((await store.listDeadLetters({ name: 'fails' })).map((d) => d.id)).toEqual([failed]);
      expect((await mustGet(store, cancelled)).status).toBe('cancelled');
      expect(await mustGet(store, runs)).toMatchObject({ status: 'queued', runAt: at(6) });
    });

    it('settles a dependency that was already dead or cancelled when the job was enqueued', async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      await store.cancelJob(a, { now: at(1) });
      const id = await enqueueDependent(store, [a], {}, at(2));
      expect((await mustGet(store, id)).status).toBe('waiting');
      await store.settleDependents({ now: at(3) });
      expect((await mustGet(store, id)).status).toBe('dead');
    });

    it('settles a chain in one call: a dead job fails its dependents, and theirs', async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      const b = await enqueueDependent(store, [a], { name: 'b' });
      const c = await enqueueDependent(store, [b], { name: 'c', onDependencyFailure: 'cancel' });
      const d = await enqueueDependent(store, [c], { name: 'd', onDependencyFailure: 'run' });
      await store.deadLetter(await claimByName(store, 'dep-a'), { reason: 'broken', now: at(5) });
      await store.settleDependents({ now: at(6), jobIds: [a] });
      expect([(await mustGet(store, b)).status, (await mustGet(store, c)).status, (await mustGet(store, d)).status]).toEqual(['dead', 'cancelled', 'queued']);
    });

    it('leaves a dependent that was cancelled meanwhile as it is', async () => {
      const { store } = ctx;
      const a = await enqueueOne(store, { name: 'dep-a' });
      const id = await enqueueDependent(store, [a]);
      await store.cancelJob(id, { now: at(1) });
      await store.complete(await claimByName(store, 'dep-a'), { now: at(2) });
      await store.settleDependents({ now: at(3), jobIds: [a] });
      expect((await mustGet(store, id)).status).toBe('cancelled');
    });

    it('enqueues a dependent in the same transaction as its dependency', async () => {
      const { store } = ctx;
      if (!store.withTransaction) return;
      const [a, id] = await store.withTransaction(async (session) => {
        const [dep] = await store.enqueue([newJob({ name: 'dep-a' })], { now: at(0), session });
        const [dependent] = await store.enqueue([newJob({ name: 'dependent', dependsOn: [dep.id] })], { now: at(0), session });
        return [dep.id, dependent.id];
      });
      expect(await mustGet(store, id)).toMatchObject({ status: 'waiting', dependsOn: [a] });
      expect((await mustGet(store, a)).dependents).toEqual([id]);
      await store.complete(await claimByName(store, 'dep-a', at(1)), { now: at(1) });
      await store.settleDependents({ now: at(2), jobIds: [a] });
      expect((await mustGet(store, id)).status).toBe('queued');
    });
  });
}

const idsOfClaim = (jobs: { id: string }[]): string[] => jobs.map((j) => j.id);
