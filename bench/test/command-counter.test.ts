import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import type { CommandStartedEvent, Document } from 'mongodb';
import { CommandCounter, type CommandCategory } from '../src/command-counter.js';

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(() => mongo.stop());

it('counts the commands command monitoring reports, by name and by what they addressed', async () => {
  // Command monitoring on the counter's own client is the reference: the same commands, seen twice.
  const counter = new CommandCounter(mongo.uri, 'jobs', { monitorCommands: true });
  const seen: CommandStartedEvent[] = [];
  counter.client.on('commandStarted', (e) => seen.push(e));
  const streamReplies: unknown[] = [];
  counter.client.on('commandSucceeded', (e) => {
    if (e.commandName === 'aggregate') streamReplies.push((e.reply as { cursor: { id: unknown } }).cursor.id);
  });
  try {
    await counter.client.connect();
    const db = counter.client.db(mongo.newDatabaseName('counter'));
    const jobs = db.collection('jobs');
    const stream = jobs.watch([], { maxAwaitTimeMS: 50 });
    const next = stream.next();
    await jobs.insertMany([1, 2, 3, 4, 5].map((n) => ({ n })));
    await next;
    await stream.close();
    await jobs.find({}, { batchSize: 2 }).toArray();
    await jobs.updateMany({ n: { $gt: 2 } }, { $set: { big: true } });
    await jobs.findOneAndUpdate({ n: 1 }, { $set: { taken: true } });
    await db.collection('other').insertOne({ x: 1 });

    const byName: Record<string, number> = {};
    for (const e of seen) byName[e.commandName] = (byName[e.commandName] ?? 0) + 1;
    expect(counter.snapshot()).toEqual(byName);
    expect(byName.getMore).toBeGreaterThanOrEqual(3); // the stream's and the find's

    // Categories as monitoring tells them: the stream's cursor is named by its aggregate's reply.
    const streamCursor = String(streamReplies[0]);
    const category = (e: CommandStartedEvent): CommandCategory => {
      const c = e.command as Document;
      if (e.commandName === 'aggregate') return 'changeStream';
      if (e.commandName === 'getMore' && String(c.getMore) === streamCursor) return 'changeStream';
      if (e.commandName === 'killCursors' && (c.cursors as unknown[]).some((id) => String(id) === streamCursor)) return 'changeStream';
      const collection: unknown = e.commandName === 'getMore' ? c.collection : c[e.commandName];
      return collection === 'jobs' ? 'job' : 'other';
    };
    const byCategory: Record<string, number> = {};
    for (const e of seen) byCategory[category(e)] = (byCategory[category(e)] ?? 0) + 1;
    expect(counter.categorySnapshot()).toEqual(byCategory);
    expect(byCategory.changeStream).toBeGreaterThanOrEqual(2);
    expect(byCategory.job).toBe(1 + 3 + 1 + 1); // insert, find + its 2 getMores, update, findAndModify
  } finally {
    await counter.close();
  }
});
