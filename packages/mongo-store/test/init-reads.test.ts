import { describe, expect, it } from '@jest/globals';
import { MongoClient, type CommandSucceededEvent } from 'mongodb';
import { MongoStore } from '../src/index.js';
import { quietLogger, useMongoFixture, type MongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// Issue 12, defect 9: init() used to read every dead letter on every start (to find moves a crash
// interrupted), on replica sets too. It must read only letters of interrupted moves.

/** Documents the server returned from `collection`, counted through the driver's command monitoring. */
function documentsReadFrom(client: MongoClient, collection: string): () => number {
  let read = 0;
  const cursorOf = new Map<string, string>();
  client.on('commandSucceeded', (event: CommandSucceededEvent) => {
    if (!['find', 'getMore', 'aggregate'].includes(event.commandName)) return; // not listIndexes
    const cursor = (event.reply as { cursor?: { ns?: string; id?: unknown; firstBatch?: unknown[]; nextBatch?: unknown[] } }).cursor;
    if (!cursor) return;
    const ns = cursor.ns ?? cursorOf.get(String(cursor.id)) ?? '';
    if (cursor.ns) cursorOf.set(String(cursor.id), cursor.ns);
    if (ns.endsWith(`.${collection}`)) read += (cursor.firstBatch ?? cursor.nextBatch ?? []).length;
  });
  return () => read;
}

function describeInitReads(topology: 'replica-set' | 'standalone', fixture: MongoFixture): void {
  it(`${topology}: a restart reads none of the dead letters of finished moves`, async () => {
    const database = fixture.mongo.newDatabaseName('init');
    const store = fixture.newStore({ database });
    await store.init();
    const n = 30;
    await store.enqueue(
      Array.from({ length: n }, (_, i) => newJob({ payload: { i } })),
      { now: at(0) },
    );
    const claimed = await store.claim(claimRequest('worker-a', at(1), n));
    expect(claimed).toHaveLength(n);
    for (const job of claimed) await store.deadLetter({ jobId: job.id, token: job.lease!.token }, { reason: 'boom', now: at(2) });
    expect((await store.stats()).deadLetters).toBe(n);

    const client = new MongoClient(fixture.mongo.uri, { monitorCommands: true });
    try {
      const read = documentsReadFrom(client, 'loom_dead_letters');
      const restarted = new MongoStore({ client, database, logger: quietLogger });
      await restarted.init();
      expect(read()).toBe(0);
      expect(await restarted.listDeadLetters({ limit: 1 })).toHaveLength(1);
      expect(read()).toBe(1); // the counter does see dead-letter reads
    } finally {
      await client.close();
    }
  });
}

describe('MongoStore.init() and the dead letters', () => {
  describeInitReads('replica-set', useMongoFixture());
  describeInitReads('standalone', useMongoFixture({ topology: 'standalone' }));
});
