import { describe, expect, it } from '@jest/globals';
import type { CommandStartedEvent, Document } from 'mongodb';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// Each finishing child of a fan-out asks whether one of its siblings is still unfinished
// (findActiveChild). With the parent index keyed on parentId alone, the server fetched every
// sibling to check its status: n documents per child, n² per fan-in. The query must be answered
// from the index alone, however many siblings have finished.
const fixture = useMongoFixture();
const SIBLINGS = 100;

describe('the fan-in queries', () => {
  it('findActiveChild examines no finished sibling, however many there are', async () => {
    const database = fixture.mongo.newDatabaseName('fanin');
    const store = fixture.newStore({ database, url: fixture.mongo.uri, client: undefined, clientOptions: { monitorCommands: true } });
    await store.init();
    try {
      const [{ id: parentId }] = await store.enqueue([newJob({ name: 'parent' })], { now: at(0) });
      const children = await store.enqueue(
        Array.from({ length: SIBLINGS + 1 }, (_, i) => newJob({ name: 'child', parentId, payload: { i, pad: 'x'.repeat(200) } })),
        { now: at(0) },
      );
      const claimed = await store.claim({ ...claimRequest('w', at(1), SIBLINGS), names: ['child'] });
      for (const job of claimed) await store.complete({ jobId: job.id, token: job.lease!.token }, { now: at(2) });
      const last = children.find((c) => !claimed.some((j) => j.id === c.id))!;

      const sent: { filter?: Document; projection?: Document; limit?: number }[] = [];
      store.client.on('commandStarted', (e: CommandStartedEvent) => e.commandName === 'find' && sent.push(e.command as (typeof sent)[number]));
      expect(await store.findActiveChild(parentId)).toBe(last.id);
      const [query] = sent;
      const reply = await store.client.db(database).command({
        explain: { find: 'loom_jobs', filter: query.filter, projection: query.projection, limit: query.limit },
        verbosity: 'executionStats',
      });
      const stats = reply.executionStats as { nReturned: number; totalDocsExamined: number };
      expect(stats.nReturned).toBe(1);
      // 0 on MongoDB (a covered query); an engine that fetches what it returns may count that one.
      expect(stats.totalDocsExamined).toBeLessThanOrEqual(1);
    } finally {
      await store.close();
    }
  });
});
