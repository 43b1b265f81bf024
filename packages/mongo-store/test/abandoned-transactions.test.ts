import { afterEach, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import type { ClientSession, Collection } from 'mongodb';
import { TcpProxy } from '../../../chaos/src/tcp-proxy.js';
import { AbandonedTransactions } from '../src/connection/abandoned-transactions.js';
import { MongoStore, type StoreLogger } from '../src/index.js';
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
async function storeBehindProxy(database: string): Promise<{ store: MongoStore; proxy: TcpProxy; warnings: string[]; logger: StoreLogger }> {
  const url = new URL(fixture.mongo.uri);
  const proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
  const warnings: string[] = [];
  const logger: StoreLogger = { debug: () => {}, warn: (_fields: unknown, message: string) => void warnings.push(message), error: () => {} };
  const store = new MongoStore({
    url: proxy.uriFor(fixture.mongo.uri),
    database,
    // A short heartbeat: the driver's monitor notices the cut within moments.
    clientOptions: { serverSelectionTimeoutMS: 500, connectTimeoutMS: 500, heartbeatFrequencyMS: 500, monitorCommands: true },
    logger,
  });
  cleanups.push(
    () => proxy.close(),
    () => store.close(),
  );
  await store.init();
  return { store, proxy, warnings, logger };
}

/**
 * Another writer gets account `a` within moments (before, it waited out the server's minute), the
 * lost transaction's +1 never landed, and the store said what it did.
 */
async function expectFreedAtOnce(accounts: Collection<{ _id: string; balance: number }>, warnings: string[]): Promise<void> {
  const write = () =>
    accounts.updateOne({ _id: 'a' }, { $inc: { balance: 10 } }, { maxTimeMS: 1_000 }).then(
      () => true,
      () => false,
    );
  await waitUntil(write, 20_000, 'another writer to get the document the lost transaction wrote');
  expect(await accounts.findOne({ _id: 'a' })).toEqual({ _id: 'a', balance: 10 });
  expect(warnings).toEqual([expect.stringContaining('ended it (killSessions)')]);
}

describe('a transaction whose connection was lost', () => {
  it.each([
    ['inside the callback', 'callback'],
    ['at the commit', 'commit'],
    // A handler whose next step needs the network (a payment service) fails with an error of its
    // own: the driver aborts, cannot reach the server, and says nothing (the transactions spec
    // has it ignore a failed abort).
    ["before the handler's own error", 'own error'],
    // The same when the network drops packets without a reset: no connection fails, the driver's
    // monitor times out and marks the server unknown, and the abort finds no server to send to.
    ["silently before the handler's own error", 'silently'],
  ] as const)('lost %s: is ended on the server once it answers again, so the documents it wrote are free at once', async (_when, where) => {
    const database = fixture.mongo.newDatabaseName('abandoned');
    const { store, proxy, warnings } = await storeBehindProxy(database);
    const accounts = fixture.mongo.client.db(database).collection<{ _id: string; balance: number }>('accounts');
    await accounts.insertOne({ _id: 'a', balance: 0 });

    let lost = '';
    const failed = store.withTransaction(async (session) => {
      lost = (session as ClientSession).id!.id.toString('hex');
      const mine = store.client.db(database).collection<{ _id: string; balance: number }>('accounts');
      await mine.updateOne({ _id: 'a' }, { $inc: { balance: 1 } }, { session: session as never });
      // The write reached the server and holds the document; then the network goes, so neither
      // the callback's next command nor the commit, nor the driver's abort, reaches the server.
      if (where === 'silently') {
        const poolCleared = once(store.client, 'connectionPoolCleared');
        proxy.silence();
        await poolCleared;
      } else {
        proxy.cut();
      }
      if (where === 'callback') await mine.findOne({ _id: 'a' });
      if (where === 'own error' || where === 'silently') throw new Error('the payment service is unreachable');
    });
    await expect(failed).rejects.toThrow(where === 'callback' || where === 'commit' ? /./ : 'the payment service is unreachable');
    proxy.restore();

    await expectFreedAtOnce(accounts, warnings);
    // The killed session is never handed to another operation, whose work the kill would end.
    const next = store.client.startSession();
    expect(next.id!.id.toString('hex')).not.toBe(lost);
    await next.endSession();
  });

  it('lost in a transaction that is always aborted (the held-jobs probe): is ended on the server too', async () => {
    const database = fixture.mongo.newDatabaseName('abandoned');
    const { store, proxy, warnings, logger } = await storeBehindProxy(database);
    const accounts = fixture.mongo.client.db(database).collection<{ _id: string; balance: number }>('accounts');
    await accounts.insertOne({ _id: 'a', balance: 0 });
    const transactions = new AbandonedTransactions(store.client, logger);
    cleanups.push(async () => transactions.close());

    // The probe's write reached the server; its abort does not, and the driver says nothing.
    await transactions.aborted(async (session) => {
      await store.client
        .db(database)
        .collection('accounts')
        .updateOne({ _id: 'a' } as never, { $inc: { balance: 1 } }, { session });
      proxy.cut();
    });
    proxy.restore();

    await expectFreedAtOnce(accounts, warnings);
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

describe("the client's signs of a lost server", () => {
  it('every store on one client shares one pair of listeners, removed with the last store', async () => {
    const { client } = fixture.mongo;
    const before = [client.listenerCount('connectionClosed'), client.listenerCount('connectionPoolCleared')];
    // Eleven: Node warns of a leak past ten listeners of one event (a listener per store did).
    const stores = Array.from({ length: 11 }, () => new MongoStore({ client, database: fixture.mongo.newDatabaseName('abandoned') }));
    expect([client.listenerCount('connectionClosed'), client.listenerCount('connectionPoolCleared')]).toEqual(before.map((n) => n + 1));
    await Promise.all(stores.slice(1).map((store) => store.close()));
    expect(client.listenerCount('connectionClosed')).toBe(before[0]! + 1);
    await stores[0]!.close();
    expect([client.listenerCount('connectionClosed'), client.listenerCount('connectionPoolCleared')]).toEqual(before);
  });
});
