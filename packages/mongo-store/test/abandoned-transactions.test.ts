import { afterEach, describe, expect, it } from '@jest/globals';
import { TcpProxy } from '../../../chaos/src/tcp-proxy.js';
import { MongoStore } from '../src/index.js';
import { useMongoFixture } from './fixture.js';
import { waitUntil } from './wait-until.js';

// A connection lost inside a transaction: the driver's abort cannot reach the server either, and
// the server keeps the transaction, holding every document it wrote, for a minute
// (transactionLifetimeLimitSeconds). The store ends it as soon as the server answers again.
const fixture = useMongoFixture();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A store whose connections go through a proxy the test can cut, and what it warned about. */
async function storeBehindProxy(database: string): Promise<{ store: MongoStore; proxy: TcpProxy; warnings: string[] }> {
  const url = new URL(fixture.mongo.uri);
  const proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
  const warnings: string[] = [];
  const store = new MongoStore({
    url: proxy.uriFor(fixture.mongo.uri),
    database,
    clientOptions: { serverSelectionTimeoutMS: 500, connectTimeoutMS: 500, monitorCommands: true },
    logger: { debug: () => {}, warn: (_fields: unknown, message: string) => void warnings.push(message), error: () => {} },
  });
  cleanups.push(
    () => proxy.close(),
    () => store.close(),
  );
  await store.init();
  return { store, proxy, warnings };
}

describe('a transaction whose connection was lost', () => {
  it.each([
    ['inside the callback', false],
    ['at the commit', true],
  ])('lost %s: is ended on the server once it answers again, so the documents it wrote are free at once', async (_when, atCommit) => {
    const database = fixture.mongo.newDatabaseName('abandoned');
    const { store, proxy, warnings } = await storeBehindProxy(database);
    const accounts = fixture.mongo.client.db(database).collection<{ _id: string; balance: number }>('accounts');
    await accounts.insertOne({ _id: 'a', balance: 0 });

    const failed = store.withTransaction(async (session) => {
      const mine = store.client.db(database).collection<{ _id: string; balance: number }>('accounts');
      await mine.updateOne({ _id: 'a' }, { $inc: { balance: 1 } }, { session: session as never });
      // The write reached the server and holds the document; then the network goes, so neither
      // the callback's next command nor the commit, nor the driver's abort, reaches the server.
      proxy.cut();
      if (!atCommit) await mine.findOne({ _id: 'a' });
    });
    await expect(failed).rejects.toThrow();
    proxy.restore();

    // Another writer gets the document within moments; before, it waited out the server's minute.
    const write = () =>
      accounts.updateOne({ _id: 'a' }, { $inc: { balance: 10 } }, { maxTimeMS: 1_000 }).then(
        () => true,
        () => false,
      );
    await waitUntil(write, 20_000, 'another writer to get the document the lost transaction wrote');
    expect(await accounts.findOne({ _id: 'a' })).toEqual({ _id: 'a', balance: 10 }); // the lost transaction's +1 never landed
    expect(warnings).toEqual([expect.stringContaining('ended it (killSessions)')]);
  });

  it('is not ended when the server answered: a failed handler costs no extra command', async () => {
    const database = fixture.mongo.newDatabaseName('abandoned');
    const { store, warnings } = await storeBehindProxy(database);
    const sent: string[] = [];
    store.client.on('commandStarted', (e) => sent.push(e.commandName));
    await expect(
      store.withTransaction(async (session) => {
        await store.client
          .db(database)
          .collection('accounts')
          .insertOne({ _id: 'b' } as never, { session: session as never });
        throw new Error('the handler changed its mind');
      }),
    ).rejects.toThrow('the handler changed its mind');
    expect(warnings).toEqual([]);
    expect(sent).not.toContain('killSessions');
  });
});
