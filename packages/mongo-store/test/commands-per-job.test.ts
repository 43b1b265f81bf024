import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { CommandStartedEvent, CommandSucceededEvent } from 'mongodb';
import { Job, Loom } from '@loom/core';
import { CaptureLogger, FakeClock } from '@loom/testing';
import type { MongoStore } from '../src/index.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';
import { waitUntil } from './wait-until.js';

// MongoDB commands per job, counted with the driver's command monitoring. Both paths are pinned
// command by command (the figures of packages/mongo-store/README.md): one more round trip per job
// is a regression users pay for on every job.
const fixture = useMongoFixture();
const IGNORED = new Set(['hello', 'ismaster', 'isMaster', 'endSessions', 'ping']);

/** A store on its own monitored client (on `database` when given, else a new one) and the commands it sent. */
async function monitoredStore(database?: string): Promise<{ store: MongoStore; commands: string[] }> {
  const store = fixture.newStore({ ...(database ? { database } : {}), url: fixture.mongo.uri, client: undefined, clientOptions: { monitorCommands: true } });
  await store.init();
  const commands: string[] = [];
  store.client.on('commandStarted', (e: CommandStartedEvent) => {
    if (!IGNORED.has(e.commandName)) commands.push(e.commandName);
  });
  return { store, commands };
}

@Job({ name: 'noop' })
class Noop {
  async run(): Promise<void> {}
}

const gates: Array<() => void> = [];
@Job({ name: 'long' })
class Long {
  async run(_payload: undefined, ctx: { signal: AbortSignal }): Promise<void> {
    await new Promise<void>((resolve) => {
      gates.push(resolve);
      ctx.signal.addEventListener('abort', () => resolve());
    });
  }
}

/** The store, with the promise of every heartbeat kept, so a test can wait for those in flight. */
function watchHeartbeats(store: MongoStore): { store: MongoStore; inFlight: () => Promise<unknown> } {
  const beats: Promise<unknown>[] = [];
  const watched = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      if (prop !== 'heartbeatMany' && prop !== 'extendLease') return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        const p = (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        beats.push(p.catch(() => undefined));
        return p;
      };
    },
  });
  return { store: watched, inFlight: () => Promise.all(beats.splice(0)) };
}

/** The change streams' own commands: one long poll per delivered event, not per job's lifecycle. */
const CHANGE_STREAM = new Set(['aggregate', 'getMore', 'killCursors']);

/**
 * Ids announced by a change stream of `store`'s (one stream, kept open: a stream opened after an
 * insert never hears it). `next(id)` resolves once `id` was announced.
 */
function announcements(store: MongoStore): { heard: Set<string>; next(id: string): Promise<void>; stop: () => void } {
  const heard = new Set<string>();
  const waiting = new Map<string, () => void>();
  const stop = store.subscribe((event) => {
    if (event.id === undefined) return;
    heard.add(event.id);
    waiting.get(event.id)?.();
  });
  const next = (id: string) => (heard.has(id) ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(id, resolve)));
  return { heard, next, stop };
}

const cleanups: Array<() => void> = [];

describe('MongoDB commands per job', () => {
  it("a running engine, one job at a time: insert, findAndModify, update — no claim on its own insert's echo, none after the run", async () => {
    const { store, commands } = await monitoredStore();
    // Presence rows are written per engine, not per job (and on stop): not counted here.
    const loom = await Loom.create({ store, jobs: [Noop], clock: new FakeClock(), logger: new CaptureLogger(), presenceInterval: false });
    try {
      await loom.start();
      const probe = announcements(store);
      cleanups.push(probe.stop);
      let completed = 0;
      let onCompleted: () => void = () => {};
      loom.on('job:completed', () => {
        completed++;
        onCompleted();
      });
      const completions = (n: number) => new Promise<void>((resolve) => ((onCompleted = () => completed >= n && resolve()), onCompleted()));
      // Both streams open asynchronously (the probe's after the engine's): warm up until the probe hears an insert.
      let warmups = 0;
      while (probe.heard.size === 0) {
        await loom.enqueue(Noop, undefined);
        await completions(++warmups);
      }
      commands.length = 0;
      const jobs = 5;
      for (let i = 1; i <= jobs; i++) {
        const { id } = await loom.enqueue(Noop, undefined);
        await Promise.all([completions(warmups + i), probe.next(id)]);
      }
      await loom.stop();
      const lifecycle = commands.filter((c) => !CHANGE_STREAM.has(c));
      console.log(
        `[mongo-store] commands per job, engine one at a time: ${(lifecycle.length / jobs).toFixed(2)} (${lifecycle.slice(0, 3).join(', ')}), plus ${((commands.length - lifecycle.length) / jobs).toFixed(2)} change-stream commands`,
      );
      expect(lifecycle).toEqual(Array.from({ length: jobs }, () => ['insert', 'findAndModify', 'update']).flat());
    } finally {
      cleanups.splice(0).forEach((stop) => stop());
      await loom.stop();
      await store.close();
    }
  });

  it('a job enqueued elsewhere: the claim it wakes leaves before the change stream asks for its next event', async () => {
    // On the enqueue → start path, a getMore sent first delays the claim by one more command's
    // write (bench/README.md, issue 33 item 6).
    const database = fixture.mongo.newDatabaseName('wake');
    const { store: engineStore, commands: seen } = await monitoredStore(database);
    const other = fixture.newStore({ database });
    await other.init();
    engineStore.client.on('commandSucceeded', (e: CommandSucceededEvent) => {
      const batch = (e.reply as { cursor?: { nextBatch?: unknown[] } }).cursor?.nextBatch;
      if (e.commandName === 'getMore' && batch !== undefined && batch.length > 0) seen.push('event');
    });
    const loom = await Loom.create({ store: engineStore, jobs: [Noop], clock: new FakeClock(), logger: new CaptureLogger(), presenceInterval: false });
    let completed = 0;
    loom.on('job:completed', () => completed++);
    try {
      await loom.start();
      // The stream opens asynchronously; the fake clock never polls: only a heard insert starts a job.
      await waitUntil(
        async () => {
          await other.enqueue([newJob({ name: 'noop' })], { now: at(0) });
          return completed > 0;
        },
        10_000,
        'the engine to hear an insert',
      );
      const afterEvents = seen.flatMap((name, i) => (name === 'event' ? [seen[i + 1]] : []));
      expect(afterEvents.length).toBeGreaterThan(0);
      expect(afterEvents[afterEvents.length - 1]).toBe('findAndModify');
    } finally {
      await loom.stop();
      await Promise.all([engineStore.close(), other.close()]);
    }
  });

  it('enqueue + claim + complete takes 3 commands, one each', async () => {
    const { store, commands } = await monitoredStore();
    try {
      const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
      const [job] = await store.claim(claimRequest());
      await store.complete({ jobId: id, token: job.lease!.token }, { result: 'ok', now: at(2) });
      console.log(`[mongo-store] commands per job, unbatched: ${commands.length} (${commands.join(', ')})`);
      expect(commands).toEqual(['insert', 'findAndModify', 'update']);
    } finally {
      await store.close();
    }
  });

  it('batched: enqueueMany of 100, claims of 10, one completeMany per claim', async () => {
    const { store, commands } = await monitoredStore();
    try {
      const results = await store.enqueue(
        Array.from({ length: 100 }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      const claimed = [];
      for (let round = 0; round < 10; round++) {
        const jobs = await store.claim(claimRequest('w', at(1), 10));
        claimed.push(...jobs);
        const outcomes = await store.completeMany(
          jobs.map((job) => ({ lease: { jobId: job.id, token: job.lease!.token } })),
          at(2),
        );
        expect(outcomes).toEqual(jobs.map(() => 'completed'));
      }
      expect(claimed).toHaveLength(100);
      expect(new Set(claimed.map((j) => j.id))).toEqual(new Set(results.map((r) => r.id)));
      const counts = commands.reduce<Record<string, number>>((acc, c) => ({ ...acc, [c]: (acc[c] ?? 0) + 1 }), {});
      console.log(`[mongo-store] commands per job, batched: ${(commands.length / 100).toFixed(2)} (${JSON.stringify(counts)} for 100 jobs)`);
      // The README's figure (0.41 per job), pinned per command: one insert for the batch; per claim
      // of 10, a find of the candidates, one bulk update and a find reading them back; one bulk
      // update per completeMany. Completing one job per command would show up as 100 more updates.
      expect(counts).toEqual({ insert: 1, find: 20, update: 20 });
    } finally {
      await store.close();
    }
  });

  it('a running engine, batched (enqueueMany, concurrency 50): at most 0.3 commands per job', async () => {
    const { store, commands } = await monitoredStore();
    const loom = await Loom.create({ store, jobs: [Noop], clock: new FakeClock(), logger: new CaptureLogger(), concurrency: 50 });
    try {
      const jobs = 500;
      await loom.enqueueMany(
        Noop,
        Array.from({ length: jobs }, () => undefined),
      );
      let completed = 0;
      const done = new Promise<void>((resolve) => loom.on('job:completed', () => ++completed === jobs && resolve()));
      commands.length = 0;
      await loom.start();
      await done;
      await loom.stop();
      const lifecycle = commands.filter((c) => !CHANGE_STREAM.has(c));
      const counts = lifecycle.reduce<Record<string, number>>((acc, c) => ({ ...acc, [c]: (acc[c] ?? 0) + 1 }), {});
      console.log(`[mongo-store] commands per job, engine batched: ${(lifecycle.length / jobs).toFixed(2)} (${JSON.stringify(counts)} for ${jobs} jobs)`);
      // Claims of up to 50 (find, bulk update, find) and group-committed completions (one bulk
      // update per batch). One update per job would alone make it 1.
      expect(lifecycle.length / jobs).toBeLessThanOrEqual(0.3);
    } finally {
      await loom.stop();
      await store.close();
    }
  });

  it('flow limits: a claim of one sends the permit and the lease (2 commands); a claim of 10 over 10 groups, 6; of 10 from one group, 4 round trips', async () => {
    const { store, commands } = await monitoredStore();
    try {
      await store.enqueue(
        Array.from({ length: 12 }, (_, i) => newJob({ payload: { i }, groupKey: `k${i}` })),
        { now: at(0) },
      );
      const counted = async (flow: NonNullable<Parameters<MongoStore['claim']>[0]['flow']>, limit: number): Promise<Record<string, number>> => {
        commands.length = 0;
        const jobs = await store.claim({ ...claimRequest('w', at(1), limit), flow });
        expect(jobs).toHaveLength(limit);
        return commands.reduce<Record<string, number>>((acc, c) => ({ ...acc, [c]: (acc[c] ?? 0) + 1 }), {});
      };
      // The permit (an update of the name's flow document), then the lease under it.
      expect(await counted([{ name: 'send', globalConcurrency: 100 }], 1)).toEqual({ findAndModify: 2 });
      expect(await counted([{ name: 'send', rateLimit: { limit: 100, perMs: 1_000 } }], 1)).toEqual({ findAndModify: 2 });
      // Full keys with the name's hold (one read) beside the candidates (one round trip), every
      // group's slot in one bulk update and one read, the leases in one bulk update and one read:
      // 6, not one update per group.
      expect(await counted([{ name: 'send', group: { concurrency: 5 } }], 10)).toEqual({ find: 4, update: 2 });
      // Round trips: a command sent while none is in flight starts one.
      let inFlight = 0;
      let roundTrips = 0;
      store.client.on('commandStarted', (e: CommandStartedEvent) => void (!IGNORED.has(e.commandName) && inFlight++ === 0 && roundTrips++));
      const done = (e: { commandName: string }) => void (!IGNORED.has(e.commandName) && inFlight--);
      store.client.on('commandSucceeded', done);
      store.client.on('commandFailed', done);
      await store.enqueue(
        Array.from({ length: 10 }, () => newJob({ groupKey: 'one' })),
        { now: at(0) },
      );
      roundTrips = 0;
      expect(await counted([{ name: 'send', group: { concurrency: 20 } }], 10)).toEqual({ find: 3, findAndModify: 1, update: 1 });
      expect(roundTrips).toBe(4);
    } finally {
      await store.close();
    }
  });

  it('flow limits: a claim of 10 across 10 rate-limit keys asks every key for its starts at once: 6 commands, not one per job', async () => {
    const { store, commands } = await monitoredStore();
    try {
      await store.enqueue(
        Array.from({ length: 10 }, (_, i) => newJob({ payload: { i }, rateLimitKey: `tenant-${i}` })),
        { now: at(0) },
      );
      commands.length = 0;
      const jobs = await store.claim({ ...claimRequest('w', at(1), 10), flow: [{ name: 'send', rateLimit: { limit: 5, perMs: 1_000, keyed: true } }] });
      expect(jobs).toHaveLength(10);
      const counts = commands.reduce<Record<string, number>>((acc, c) => ({ ...acc, [c]: (acc[c] ?? 0) + 1 }), {});
      // Full keys and the name's hold, the candidates; every key's starts in one bulk update and one
      // read; the leases in one bulk update and one read.
      expect(counts).toEqual({ find: 4, update: 2 });
    } finally {
      await store.close();
    }
  });

  it('flow limits: completeMany of 10 runs holding concurrency slots sends 2 commands, the completions and one release of every slot', async () => {
    const { store, commands } = await monitoredStore();
    try {
      await store.enqueue(
        Array.from({ length: 10 }, (_, i) => newJob({ payload: { i }, groupKey: `k${i % 3}` })),
        { now: at(0) },
      );
      const flow = [{ name: 'send', globalConcurrency: 10, group: { concurrency: 4 } }];
      const jobs = await store.claim({ ...claimRequest('w', at(1), 10), flow });
      expect(jobs).toHaveLength(10);
      commands.length = 0;
      const outcomes = await store.completeMany(
        jobs.map((job) => ({ lease: { jobId: job.id, token: job.lease!.token } })),
        at(2),
      );
      expect(outcomes).toEqual(jobs.map(() => 'completed'));
      // One bulk update completes them; one update frees their slots in the name's and the 3 keys' documents.
      expect(commands).toEqual(['update', 'update']);
      // Every slot is free again: 10 more start.
      await store.enqueue(
        Array.from({ length: 10 }, (_, i) => newJob({ payload: { i }, groupKey: `k${i % 3}` })),
        { now: at(0) },
      );
      expect(await store.claim({ ...claimRequest('w', at(3), 10), flow })).toHaveLength(10);
    } finally {
      await store.close();
    }
  });

  it('completeMany of 40 members of one batch: one transaction for all of them, 7 commands, not ~3 per member', async () => {
    const { store, commands } = await monitoredStore();
    try {
      const batch = await store.createBatch({ jobs: Array.from({ length: 50 }, (_, i) => newJob({ payload: { i } })), callbacks: {} }, { now: at(0) });
      const jobs = await store.claim(claimRequest('w', at(1), 40));
      expect(jobs).toHaveLength(40);
      commands.length = 0;
      const outcomes = await store.completeMany(
        jobs.map((job) => ({ lease: { jobId: job.id, token: job.lease!.token } })),
        at(2),
      );
      expect(outcomes).toEqual(jobs.map(() => 'completed'));
      // The group commit's bulk write matches no member (a member's end moves its batch's counts in
      // a transaction) and its read finds them members. Then one transaction: their completions,
      // one $inc of every stripe they fall in, one read of those stripes, and the batch's count of
      // complete stripes (40 of 50 members over at most 32 stripes leave some stripe complete).
      expect(commands).toEqual(['update', 'find', 'update', 'update', 'find', 'findAndModify', 'commitTransaction']);
      expect(await store.getBatch(batch.id)).toMatchObject({ completed: 40, pending: 10 });
    } finally {
      await store.close();
    }
  });

  it('3 completed dependencies of 7 jobs are settled in 3 commands: one read, one write for every edge, one close', async () => {
    const { store, commands } = await monitoredStore();
    try {
      const deps = await store.enqueue(
        Array.from({ length: 3 }, (_, i) => newJob({ name: 'dep', payload: { i } })),
        { now: at(0) },
      );
      // Two dependents of each, and one of all three.
      const dependents = await store.enqueue(
        [
          ...deps.flatMap((d, i) => [0, 1].map((k) => newJob({ payload: { i, k }, dependsOn: [d.id] }))),
          newJob({ payload: 'all', dependsOn: deps.map((d) => d.id) }),
        ],
        { now: at(0) },
      );
      const running = await store.claim({ ...claimRequest('w', at(1), 3), names: ['dep'] });
      for (const job of running) await store.complete({ jobId: job.id, token: job.lease!.token }, { now: at(2) });
      commands.length = 0;
      expect(await store.settleDependents({ now: at(3), jobIds: deps.map((d) => d.id) })).toBe(3);
      // Per edge, two statements (drop the dependency from the job's unmet list; queue the job if
      // none is left), all in one ordered bulk write: not two round trips each, one after the other.
      expect(commands).toEqual(['find', 'update', 'update']);
      const ready = await store.claim(claimRequest('w', at(4), 10));
      expect(ready.map((job) => job.id).sort()).toEqual(dependents.map((d) => d.id).sort());
    } finally {
      await store.close();
    }
  });

  it('long jobs at concurrency 50, started at different times: one heartbeat command per beat interval for all of them', async () => {
    const { store: monitored, commands } = await monitoredStore();
    const { store, inFlight } = watchHeartbeats(monitored);
    const clock = new FakeClock();
    const loom = await Loom.create({ store, jobs: [Long], clock, logger: new CaptureLogger(), concurrency: 50, lease: '30s' });
    gates.length = 0;
    try {
      let started = 0;
      let onStarted: () => void = () => {};
      loom.on('job:started', () => {
        started++;
        onStarted();
      });
      const startedAtLeast = (n: number) => new Promise<void>((resolve) => ((onStarted = () => started >= n && resolve()), onStarted()));
      let lost = 0;
      loom.on('worker:error', () => lost++);
      await loom.start();
      // Five waves of ten, 2 s apart: alone, each run would beat on its own phase.
      for (let wave = 1; wave <= 5; wave++) {
        await loom.enqueueMany(
          Long,
          Array.from({ length: 10 }, () => undefined),
        );
        await startedAtLeast(wave * 10);
        clock.advance(2_000);
        await inFlight();
      }
      // The heartbeats' commands: those on the jobs collection (the engine's poll of flow holds reads
      // the flow collection every poll interval, whatever runs).
      const jobCommands: string[] = [];
      monitored.client.on('commandStarted', (e: CommandStartedEvent) => {
        if (!IGNORED.has(e.commandName) && !CHANGE_STREAM.has(e.commandName) && e.command[e.commandName] === 'loom_jobs') jobCommands.push(e.commandName);
      });
      commands.length = 0;
      const intervals = 6; // a minute: six heartbeat intervals of a 30 s lease
      // Second by second, each heartbeat answered before time moves on (as on a real clock, where a
      // run schedules its next heartbeat when this one is answered).
      for (let second = 0; second < intervals * 10; second++) {
        clock.advance(1_000);
        await inFlight();
      }
      const lifecycle = jobCommands.splice(0);
      const counts = lifecycle.reduce<Record<string, number>>((acc, c) => ({ ...acc, [c]: (acc[c] ?? 0) + 1 }), {});
      const perJobPerInterval = lifecycle.length / (50 * intervals);
      console.log(
        `[mongo-store] heartbeat commands per job per beat interval, 50 long jobs: ${perJobPerInterval.toFixed(3)} (${JSON.stringify(counts)} on the jobs collection over ${intervals} intervals; all commands: ${commands.length})`,
      );
      // One bulk update per interval carries all 50 heartbeats; a heartbeat per job would be 1.
      expect(counts).toEqual({ update: intervals });
      expect(perJobPerInterval).toBeLessThanOrEqual(0.05);
      expect(lost).toBe(0);
      expect(gates).toHaveLength(50);
    } finally {
      gates.splice(0).forEach((open) => open());
      await loom.stop();
      await monitored.close();
    }
  });
});
