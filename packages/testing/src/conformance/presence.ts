/// <reference types="jest" />
import { MAX_PRESENCE_JOB_IDS, type WorkerPresence } from '@loom/core';
import type { ConformanceContext } from './harness.js';

/**
 * The instant these cases measure time from: far in the future, unlike the suite's reference
 * instant. A database's TTL monitor (MongoStore's index on `expiresAt`) judges expiry by its own
 * wall clock and may delete a row expired by it at any moment; rows that expire in 2100 stay put
 * while a case runs, so only `listPresence(now)` decides what is listed.
 */
const FAR = Date.parse('2100-01-01T00:00:00.000Z');
const at = (ms: number): Date => new Date(FAR + ms);

/** A presence row of engine `id`, last seen at `seenMs` after the reference instant, expiring 15 s later. */
function row(id: string, seenMs = 0, overrides: Partial<WorkerPresence> = {}): WorkerPresence {
  return {
    id,
    host: 'host-1',
    pid: 4242,
    version: '0.1.0',
    node: 'v22.0.0',
    queues: ['default', 'emails'],
    concurrency: 10,
    running: 2,
    runningJobIds: ['job-1', 'job-2'],
    state: 'running',
    startedAt: at(0),
    lastSeenAt: at(seenMs),
    expiresAt: at(seenMs + 15_000),
    ...overrides,
  };
}

export function describePresence(ctx: ConformanceContext): void {
  describe('engine presence (recordPresence, removePresence, listPresence)', () => {
    it('stores one row per engine, each beat replacing the last, and lists them by id', async () => {
      const { store } = ctx;
      await store.recordPresence(row('engine-b'));
      await store.recordPresence(row('engine-a'));
      await store.recordPresence(row('engine-b', 5_000, { running: 0, runningJobIds: [], state: 'stopping' }));
      const listed = await store.listPresence(at(5_000));
      expect(listed).toEqual([row('engine-a'), row('engine-b', 5_000, { running: 0, runningJobIds: [], state: 'stopping' })]);
      // The caller owns what it got: changing it changes nothing stored.
      listed[0]!.queues.push('mutated');
      listed[0]!.lastSeenAt.setTime(0);
      expect((await store.listPresence(at(5_000)))[0]).toEqual(row('engine-a'));
    });

    it('sees the rows another process wrote', async () => {
      await ctx.store.recordPresence(row('engine-a'));
      const peer = await ctx.peer();
      await peer.recordPresence(row('engine-b'));
      expect((await ctx.store.listPresence(at(1))).map((r) => r.id)).toEqual(['engine-a', 'engine-b']);
      expect((await peer.listPresence(at(1))).map((r) => r.id)).toEqual(['engine-a', 'engine-b']);
    });

    it('never lists a row whose expiresAt has come (the engine missed its beats), and lists it again after a new beat', async () => {
      const { store } = ctx;
      await store.recordPresence(row('engine-a'));
      await store.recordPresence(row('engine-b', 10_000));
      expect((await store.listPresence(at(14_999))).map((r) => r.id)).toEqual(['engine-a', 'engine-b']);
      expect((await store.listPresence(at(15_000))).map((r) => r.id)).toEqual(['engine-b']);
      await store.recordPresence(row('engine-a', 20_000));
      expect((await store.listPresence(at(20_000))).map((r) => r.id)).toEqual(['engine-a', 'engine-b']);
      expect(await store.listPresence(at(35_000))).toEqual([]);
    });

    it('removes a row on a clean stop; removing an unknown one reports false', async () => {
      const { store } = ctx;
      await store.recordPresence(row('engine-a'));
      await store.recordPresence(row('engine-b'));
      expect(await store.removePresence('engine-a')).toBe(true);
      expect(await store.removePresence('engine-a')).toBe(false);
      expect(await store.removePresence('never-seen')).toBe(false);
      expect((await store.listPresence(at(0))).map((r) => r.id)).toEqual(['engine-b']);
    });

    it('refuses a malformed row (INVALID_ARGUMENT), storing nothing', async () => {
      const { store } = ctx;
      const bad: unknown[] = [
        row(''),
        { ...row('engine-a'), id: { $gt: '' } },
        { ...row('engine-a'), lastSeenAt: 'yesterday' },
        { ...row('engine-a'), expiresAt: new Date(Number.NaN) },
        { ...row('engine-a'), running: -1 },
        { ...row('engine-a'), state: 'dead' },
        { ...row('engine-a'), runningJobIds: Array.from({ length: MAX_PRESENCE_JOB_IDS + 1 }, (_, i) => `job-${i}`) },
      ];
      for (const presence of bad) {
        await expect(store.recordPresence(presence as WorkerPresence)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      expect(await store.listPresence(at(0))).toEqual([]);
      await expect(store.listPresence('now' as unknown as Date)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(store.removePresence({ $ne: '' } as unknown as string)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    });
  });
}
