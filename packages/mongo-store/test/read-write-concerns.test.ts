import { describe, expect, it } from '@jest/globals';
import { MongoClient, type CommandStartedEvent, type Document } from 'mongodb';
import { MongoStore } from '../src/index.js';
import { quietLogger, useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';
import { waitUntil } from './wait-until.js';

// The application may share its client with Loom and tune it for its own reads: secondaries, a
// majority snapshot, w: 1. None of that may reach the store's own commands: a batch claim's
// read-back or a fenced read on a lagging secondary misses what the store just wrote (jobs leased
// but never run, false LEASE_LOST), and a w: 1 commit makes a dead-letter move or a transactional
// completion rollback-able. What the store sends is read with the driver's command monitoring.
const fixture = useMongoFixture();
const HANDSHAKE = new Set(['hello', 'ismaster', 'isMaster', 'endSessions', 'ping']);

interface Sent {
  name: string;
  /** A sent command, with the fields these tests read. */
  command: Document & {
    $readPreference?: { mode?: string };
    readConcern?: { level?: string };
    writeConcern?: { w?: number | string };
    txnNumber?: unknown;
    startTransaction?: boolean;
  };
}

async function storeOnTunedClient(): Promise<{ store: MongoStore; client: MongoClient; sent: Sent[] }> {
  const client = new MongoClient(fixture.mongo.uri, {
    readPreference: 'secondaryPreferred',
    readConcern: { level: 'majority' },
    writeConcern: { w: 1 },
    monitorCommands: true,
  });
  const sent: Sent[] = [];
  client.on('commandStarted', (e: CommandStartedEvent) => {
    if (!HANDSHAKE.has(e.commandName)) sent.push({ name: e.commandName, command: e.command });
  });
  await client.connect();
  // Retention off: the server's TTL monitor would remove completed jobs dated at the fake T0 (months ago) mid-test.
  const store = new MongoStore({ client, database: fixture.mongo.newDatabaseName('concerns'), logger: quietLogger, retention: { completed: false } });
  return { store, client, sent };
}

const isChangeStream = (c: Document) => c.aggregate !== undefined && Array.isArray(c.pipeline) && c.pipeline.some((s: Document) => '$changeStream' in s);

describe('MongoStore on a client tuned for secondary reads and w: 1', () => {
  it('reads from the primary with its own read concern, and writes and commits with its own write concern', async () => {
    if (!fixture.mongo.replicaSet) return; // read preferences and transactions need a replica set
    const { store, client, sent } = await storeOnTunedClient();
    try {
      await store.init();
      const unsubscribe = store.subscribe(() => {});
      await waitUntil(async () => sent.some((s) => isChangeStream(s.command)), 10_000, 'the change stream to open');

      const [{ id: keyed }] = await store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(0) });
      const [dup] = await store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(0) }); // dedup lookup
      expect(dup).toEqual({ id: keyed, deduplicated: true });
      await store.enqueue([newJob(), newJob(), newJob()], { now: at(0) });

      const [first] = await store.claim(claimRequest('w', at(1), 1));
      const batch = await store.claim(claimRequest('w', at(1), 2)); // candidates, bulk update, read-back
      expect(batch).toHaveLength(2);
      const lease = (job: { id: string; lease?: { token: string } }) => ({ jobId: job.id, token: job.lease!.token });

      const step = { name: 's', kind: 'step' as const, status: 'completed' as const, result: 1, at: at(2) };
      await store.recordStep(lease(first), step, at(2));
      expect(await store.recordStep(lease(first), { ...step, result: 2 }, at(2))).toMatchObject({ result: 1 }); // fenced read
      expect(await store.getJob(first.id)).toMatchObject({ status: 'running' });
      await store.listJobs({ name: 'send' });
      await store.stats();

      await store.deadLetter(lease(batch[0]), { reason: 'poison', now: at(3) }); // transaction
      expect(await store.replayDeadLetter(batch[0].id, at(4))).toBe(batch[0].id); // transaction
      await store.withTransaction((session) => store.complete(lease(batch[1]), { result: 'ok', now: at(5), session }));
      expect(await store.getJob(batch[1].id)).toMatchObject({ status: 'completed' });
      unsubscribe();

      const names = sent.map((s) => s.name);
      expect(names).toEqual(expect.arrayContaining(['listIndexes', 'find', 'aggregate', 'findAndModify', 'update', 'commitTransaction']));
      for (const { name, command } of sent) {
        const where = `${name} ${JSON.stringify(command)}`;
        expect([where, command.$readPreference?.mode ?? 'primary']).toEqual([where, 'primary']);
        if (command.readConcern !== undefined) {
          const level = command.startTransaction ? 'snapshot' : isChangeStream(command) ? 'majority' : 'local';
          expect([where, command.readConcern.level]).toEqual([where, level]);
        }
        if (command.writeConcern !== undefined) expect([where, command.writeConcern.w]).toEqual([where, 'majority']);
      }
      // Reads outside transactions pin `local`; every transaction starts with `snapshot` and commits with majority.
      expect(sent.filter((s) => s.name === 'find' && s.command.txnNumber === undefined).every((s) => s.command.readConcern?.level === 'local')).toBe(true);
      const commits = sent.filter((s) => s.name === 'commitTransaction');
      expect(commits.length).toBe(3);
      for (const commit of commits) expect(commit.command.writeConcern).toMatchObject({ w: 'majority' });
      expect(sent.filter((s) => s.command.startTransaction === true)).toHaveLength(3);
    } finally {
      await store.close();
      await client.close();
    }
  });
});
