import { describe, expect, it } from '@jest/globals';
import { MongoClient, type CommandStartedEvent, type Document } from 'mongodb';
import { JOB_STATUSES } from '@loom/core';
import { MongoStore } from '../src/index.js';
import { quietLogger, useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// Issue 12, defect 16 (stats() and an unfiltered dead-letter list scanned whole collections) and
// issue 14 (a page of jobs costs the same with a thousand jobs or a million). Every query these
// operations send is recorded and explained: none may be a collection scan of the jobs or the
// dead letters. (Explain is what mongod and the emulator both answer; timings would be flaky.)
const fixture = useMongoFixture();

/** Fields a driver adds to a command that an explain of it must not carry. */
const SESSION_FIELDS = ['lsid', '$db', '$clusterTime', '$readPreference', 'txnNumber', 'readConcern', 'writeConcern', 'apiVersion', 'cursor'];

function stagesOf(plan: unknown, out: string[] = []): string[] {
  if (Array.isArray(plan)) plan.forEach((p) => stagesOf(p, out));
  else if (plan && typeof plan === 'object') {
    for (const [key, value] of Object.entries(plan)) {
      if (key === 'stage' && typeof value === 'string') out.push(value);
      else if (key !== 'command' && key !== 'parsedQuery') stagesOf(value, out);
    }
  }
  return out;
}

describe('MongoStore reads for operators are index-backed', () => {
  it('stats, listQueues, listDeadLetters and listJobPage never scan a collection', async () => {
    const database = fixture.mongo.newDatabaseName('scans');
    const client = new MongoClient(fixture.mongo.uri, { monitorCommands: true });
    const sent: CommandStartedEvent[] = [];
    client.on('commandStarted', (event) => sent.push(event));
    const store = new MongoStore({ client, database, logger: quietLogger, retention: { completed: false } });
    try {
      await store.init();
      await store.enqueue([newJob(), newJob({ queue: 'mail', name: 'mail' }), newJob({ name: 'other' })], { now: at(0) });
      const [job] = await store.claim(claimRequest());
      await store.deadLetter({ jobId: job.id, token: job.lease!.token }, { reason: 'boom', now: at(2) });
      await store.setQueuePaused('mail', true, at(3));

      sent.length = 0;
      await store.stats();
      await store.listQueues();
      await store.listQueues(at(3));
      await store.listDeadLetters({});
      await store.listDeadLetters({ name: 'send', limit: 5 });
      await store.listDeadLetters({ queue: 'default', before: at(10) });
      const [first] = await store.listJobPage({ statuses: [...JOB_STATUSES], limit: 1 });
      await store.listJobPage({ statuses: [...JOB_STATUSES], limit: 1, after: { createdAt: first.createdAt, id: first.id } });
      await store.listJobPage({ statuses: ['queued', 'dead'], name: 'send', limit: 10 });
      await store.listJobPage({ statuses: ['running', 'dead'], queue: 'default', createdAfter: at(-1), limit: 10 });
      await store.listJobPage({ statuses: ['completed'], limit: 10 });
      await store.listJobPage({ statuses: [...JOB_STATUSES], idempotencyKey: 'k', limit: 10 });
      // Payload fields are not indexed: the page walks its list index range and checks each document.
      await store.listJobPage({ statuses: [...JOB_STATUSES], payload: [{ path: 'n', value: 1 }], limit: 10 });

      const reads = sent.filter(
        (e) => ['find', 'aggregate', 'count', 'distinct'].includes(e.commandName) && (e.command[e.commandName] as string) !== 'loom_queues',
      );
      expect(reads.length).toBeGreaterThan(10);
      const db = fixture.mongo.client.db(database);
      for (const { commandName, command } of reads) {
        const inner: Document = { ...command };
        for (const field of SESSION_FIELDS) delete inner[field];
        if (commandName === 'aggregate') inner.cursor = {};
        const explained = await db.command({ explain: inner, verbosity: 'queryPlanner' });
        const stages = stagesOf(explained);
        expect({ command: inner, stages }).toEqual({ command: inner, stages: expect.not.arrayContaining(['COLLSCAN']) });
        expect(stages.length).toBeGreaterThan(0);
      }
    } finally {
      await client.close();
    }
  });

  it('a page of the unfiltered dead-letter list reads only the letters on it, however many there are', async () => {
    const database = fixture.mongo.newDatabaseName('dlpage');
    const client = new MongoClient(fixture.mongo.uri, { monitorCommands: true });
    const sent: CommandStartedEvent[] = [];
    client.on('commandStarted', (event) => sent.push(event));
    const store = new MongoStore({ client, database, logger: quietLogger, retention: { completed: false, dead: false } });
    try {
      await store.init();
      const n = 40;
      await store.enqueue(
        Array.from({ length: n }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      const claimed = await store.claim(claimRequest('worker-a', at(1), n));
      for (const [i, job] of claimed.entries()) await store.deadLetter({ jobId: job.id, token: job.lease!.token }, { reason: 'boom', now: at(10 + i) });

      sent.length = 0;
      const page = await store.listDeadLetters({ limit: 5 });
      expect(page.map((d) => d.diedAt)).toEqual([49, 48, 47, 46, 45].map(at));
      const [find] = sent.filter((e) => e.commandName === 'find');
      const inner: Document = { ...find!.command };
      for (const field of SESSION_FIELDS) delete inner[field];
      // The work done, not only the plan's shape: the server fetched the five letters of the page.
      const explained = await fixture.mongo.client.db(database).command({ explain: inner, verbosity: 'executionStats' });
      expect(stagesOf(explained.queryPlanner)).not.toContain('COLLSCAN');
      expect(explained.executionStats).toMatchObject({ nReturned: 5, totalDocsExamined: 5 });
    } finally {
      await client.close();
    }
  });

  it('countFinished counts completions on the retention index and deaths on the death-time index, never scanning', async () => {
    const database = fixture.mongo.newDatabaseName('finished');
    const client = new MongoClient(fixture.mongo.uri, { monitorCommands: true });
    const sent: CommandStartedEvent[] = [];
    client.on('commandStarted', (event) => sent.push(event));
    // A retention far longer than the test dates' age, so the TTL monitor deletes nothing meanwhile.
    const store = new MongoStore({ client, database, logger: quietLogger, retention: { completed: '36500d' } });
    try {
      await store.init();
      await store.enqueue([newJob(), newJob(), newJob(), newJob({ name: 'parent' })], { now: at(0) });
      const [a, b, c] = await store.claim(claimRequest('worker-a', at(1), 3));
      await store.complete({ jobId: a.id, token: a.lease!.token }, { now: at(10) });
      await store.complete({ jobId: b.id, token: b.lease!.token }, { now: at(20) });
      await store.deadLetter({ jobId: c.id, token: c.lease!.token }, { reason: 'boom', now: at(20) });
      // A child completed while its parent runs: kept from retention for the parent, counted all the same.
      const [parent] = await store.claim({ ...claimRequest('worker-a', at(21)), names: ['parent'] });
      await store.enqueue([newJob({ name: 'child', parentId: parent.id })], { now: at(22) });
      const [child] = await store.claim({ ...claimRequest('worker-a', at(23)), names: ['child'] });
      await store.complete({ jobId: child.id, token: child.lease!.token }, { now: at(25) });

      sent.length = 0;
      expect(await store.countFinished({ status: 'completed', from: at(0), to: at(20) })).toBe(1);
      expect(await store.countFinished({ status: 'completed', from: at(0), to: at(21) })).toBe(2);
      expect(await store.countFinished({ status: 'completed', from: at(21), to: at(30) })).toBe(1);
      expect(await store.countFinished({ status: 'dead', from: at(20), to: at(21) })).toBe(1);
      const counts = sent.filter((e) => ['count', 'aggregate'].includes(e.commandName));
      expect(counts.length).toBeGreaterThanOrEqual(4);
      const db = fixture.mongo.client.db(database);
      for (const { commandName, command } of counts) {
        const inner: Document = { ...command };
        for (const field of SESSION_FIELDS) delete inner[field];
        if (commandName === 'aggregate') inner.cursor = {};
        const stages = stagesOf(await db.command({ explain: inner, verbosity: 'queryPlanner' }));
        expect({ command: inner, stages }).toEqual({ command: inner, stages: expect.not.arrayContaining(['COLLSCAN']) });
        expect(stages.length).toBeGreaterThan(0);
      }
      // Keeping completed jobs forever leaves no index on their finish time: no count, no scan.
      const forever = new MongoStore({ client, database: fixture.mongo.newDatabaseName('forever'), logger: quietLogger, retention: { completed: false } });
      await forever.init();
      expect(await forever.countFinished({ status: 'completed', from: at(0), to: at(21) })).toBeNull();
    } finally {
      await client.close();
    }
  });
});
