// failCommand's blockConnection on the embedded emulator, which shares its event loop with the
// client: a stall of the process across both timers must not let the blocked reply overtake the
// client's socket timeout (MongoDB's spec test transactions/error-labels-blockConnection failed
// that way once under load).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoClient, MongoNetworkTimeoutError } from 'mongodb';
import { openTarget, type Target } from './target.js';

let t: Target;
beforeAll(async () => {
  t = await openTarget({ emulator: true });
});
afterAll(async () => {
  await t.close();
});

/** Blocks the whole process for `ms`, as a GC pause or a descheduled test worker does. */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe('failCommand blockConnection (the emulator itself, in every environment)', () => {
  // [what, when the stall starts (ms after the send), how long it lasts (ms)]
  it.each([
    ['no stall', undefined, 0],
    // covers the timeout (100) and the block's end (150)
    ['a stall across the timeout and the block', 60, 200],
    // ends after the timeout, before the block's end
    ['a stall that ends between them', 90, 40],
  ])("a client's socket timeout shorter than the block wins: %s", async (_what, stallAt, stallMs) => {
    const client = new MongoClient(t.uri, { socketTimeoutMS: 100, retryReads: false });
    await client.connect();
    try {
      const coll = client.db(t.db.databaseName).collection('blocked');
      await coll.findOne({});
      await t.client.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: { times: 1 },
        data: { failCommands: ['find'], blockConnection: true, blockTimeMS: 150 },
      });
      if (stallAt !== undefined) setTimeout(() => stall(stallMs), stallAt);
      const outcome = await coll.findOne({}).then(
        () => 'answered',
        (e: unknown) => e,
      );
      expect(outcome).toBeInstanceOf(MongoNetworkTimeoutError);
    } finally {
      await client.close();
      await t.client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    }
  });
});
