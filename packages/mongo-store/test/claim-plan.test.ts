import { describe, expect, it } from '@jest/globals';
import type { CommandStartedEvent, Document } from 'mongodb';
import type { MongoStore } from '../src/index.js';
import { useMongoFixture } from './fixture.js';
import { at, newJob } from './jobs.js';

// A claim must skip due jobs it may not take (a name whose concurrency is used up in this engine,
// or a name no engine here runs) without fetching them: with the claim index led by queue alone,
// every such job sorting ahead was fetched and discarded on every claim (3 ms -> 88 ms with 20k
// of them). The claim's own commands are captured with command monitoring and explained: the
// documents examined must not grow with the jobs ahead. (Times are measured by `npm run bench`.)
const fixture = useMongoFixture();
const AHEAD = 300;

/** The fields of a sent find or findAndModify that these tests read. */
interface ClaimQuery {
  find?: string;
  findAndModify?: string;
  query?: Document;
  filter?: { name?: { $in?: unknown[] } };
  sort?: Document;
  hint?: Document | string;
  limit?: number;
  projection?: Document;
}

async function monitoredStore(): Promise<{ store: MongoStore; database: string; sent: ClaimQuery[] }> {
  const database = fixture.mongo.newDatabaseName('plan');
  const store = fixture.newStore({ database, url: fixture.mongo.uri, client: undefined, clientOptions: { monitorCommands: true } });
  await store.init();
  const sent: ClaimQuery[] = [];
  store.client.on('commandStarted', (e: CommandStartedEvent) => {
    if (e.commandName === 'find' || e.commandName === 'findAndModify') sent.push(e.command as ClaimQuery);
  });
  return { store, database, sent };
}

/** `executionStats` of the claim query `command` (a findAndModify or a find), run as a find. */
async function explain(store: MongoStore, database: string, command: ClaimQuery): Promise<{ nReturned: number; totalDocsExamined: number }> {
  const find = { find: 'loom_jobs', filter: command.query ?? command.filter, sort: command.sort, hint: command.hint, limit: command.limit ?? 1 };
  const reply = await store.client.db(database).command({ explain: find, verbosity: 'executionStats' });
  return reply.executionStats as { nReturned: number; totalDocsExamined: number };
}

const claim = (limit: number, names: string[], excludeNames: string[] = []) => ({
  owner: 'w',
  queues: ['default'],
  names,
  excludeNames,
  limit,
  leaseUntil: at(60_000),
  now: at(1),
});

describe('the claim query', () => {
  it('fetches no due job of an excluded or unknown name, however many sort ahead', async () => {
    const { store, database, sent } = await monitoredStore();
    try {
      const ahead = Array.from({ length: AHEAD }, (_, i) => newJob({ name: i % 2 === 0 ? 'saturated' : 'unknown', priority: 5, payload: { i } }));
      await store.enqueue(ahead, { now: at(0) });
      const wanted = await store.enqueue(
        [0, 1, 2, 3].map((i) => newJob({ payload: { i } })),
        { now: at(0) },
      );

      sent.length = 0;
      const [first] = await store.claim(claim(1, ['send', 'saturated'], ['saturated']));
      expect(first.id).toBe(wanted[0].id);
      const single = sent.find((c) => c.findAndModify !== undefined)!;
      // A merge of index ranges may read one entry ahead per range; nothing near the jobs ahead.
      const stats1 = await explain(store, database, single);
      expect(stats1.nReturned).toBe(1);
      expect(stats1.totalDocsExamined).toBeLessThanOrEqual(1 + 2);

      sent.length = 0;
      const batch = await store.claim(claim(3, ['send', 'saturated'], ['saturated']));
      expect(batch.map((j) => j.id)).toEqual(wanted.slice(1).map((r) => r.id));
      const candidates = sent.find((c) => c.find !== undefined && c.projection?._id === 1)!;
      await store.enqueue([newJob(), newJob(), newJob()], { now: at(0) }); // claimable again, for the explain
      const stats3 = await explain(store, database, candidates);
      expect(stats3.nReturned).toBe(3);
      expect(stats3.totalDocsExamined).toBeLessThanOrEqual(3 + 2);
    } finally {
      await store.close();
    }
  });

  it('keeps claim order across more (queue, name) pairs than one query merges', async () => {
    const { store, database, sent } = await monitoredStore();
    try {
      // 300 names: the claim reads its candidates in groups of at most 200 pairs and merges them.
      const names = Array.from({ length: 300 }, (_, i) => `job-${i}`);
      const jobs = await store.enqueue(
        names.map((name, i) => newJob({ name, priority: (i * 7) % 11, payload: { i } })),
        { now: at(0) },
      );
      const order = jobs
        .map((r, i) => ({ id: r.id, priority: (i * 7) % 11, i }))
        .sort((a, b) => b.priority - a.priority || a.i - b.i)
        .map((j) => j.id);
      sent.length = 0;
      const [best] = await store.claim(claim(1, names));
      expect(best.id).toBe(order[0]);
      const next = await store.claim(claim(5, names, ['job-0']));
      expect(next.map((j) => j.id)).toEqual(order.slice(1, 6));
      // Past 200 ranges a server sorts every due job of the claim in memory: each query stays below.
      const reads = sent.filter((s) => s.find !== undefined && s.filter?.name?.$in);
      expect(reads.length).toBeGreaterThan(1);
      for (const read of reads) {
        expect(read.filter!.name!.$in!.length).toBeLessThanOrEqual(200);
        expect((await explain(store, database, read)).totalDocsExamined).toBeLessThanOrEqual(read.limit! + 2);
      }
    } finally {
      await store.close();
    }
  });
});
