import { afterAll, beforeAll } from '@jest/globals';
import { startTestMongo, type StartTestMongoOptions, type TestMongo } from '@loom/testing/mongo';
import { MongoStore, type MongoStoreOptions } from '../src/index.js';

/**
 * One MongoDB per test file (started in `beforeAll`, stopped in `afterAll`) and fresh stores, each
 * in its own database, on the shared client.
 */
export interface MongoFixture {
  readonly mongo: TestMongo;
  /** A store on a new database (or on `database`, to reopen one). Not initialised. */
  newStore(options?: Partial<MongoStoreOptions>): MongoStore;
}

/** How long the fixture's teardown waits for a store's last writes before stopping the server anyway. */
const CLOSE_BOUND_MS = 2_000;

export function useMongoFixture(options: StartTestMongoOptions = {}): MongoFixture {
  let mongo: TestMongo | undefined;
  /** Stores on the shared client that a test may have left open. */
  const onSharedClient: MongoStore[] = [];
  beforeAll(async () => {
    mongo = await startTestMongo(options);
  });
  afterAll(async () => {
    // A store left open keeps its count flush timer (60 s, unref'd): after the client below is
    // closed it fires in the same jest worker while a later file runs, and warns there.
    await Promise.all(onSharedClient.splice(0).map(closeWithin));
    await mongo?.stop();
  });
  const fixture: MongoFixture = {
    get mongo(): TestMongo {
      if (!mongo) throw new Error('the test MongoDB exists only inside tests');
      return mongo;
    },
    newStore(overrides = {}) {
      const m = fixture.mongo;
      const base = overrides.url === undefined ? { client: m.client } : {};
      const store = new MongoStore({ ...base, database: m.newDatabaseName('store'), logger: quietLogger, ...overrides } as MongoStoreOptions);
      if (overrides.url === undefined && overrides.client === undefined) onSharedClient.push(store);
      return store;
    },
  };
  return fixture;
}

/** Closes `store` (a second close is harmless), giving up after CLOSE_BOUND_MS. */
async function closeWithin(store: MongoStore): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, CLOSE_BOUND_MS);
    timer.unref();
  });
  await Promise.race([store.close().catch(() => {}), bound]);
  clearTimeout(timer);
}

/** Tests assert on behaviour, not log lines; warnings still show up. */
export const quietLogger = {
  debug: () => {},
  warn: (obj: Record<string, unknown>, msg?: string) => console.warn(msg, obj),
  error: (obj: Record<string, unknown>, msg?: string) => console.error(msg, obj),
};
