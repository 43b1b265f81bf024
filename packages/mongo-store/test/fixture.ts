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

export function useMongoFixture(options: StartTestMongoOptions = {}): MongoFixture {
  let mongo: TestMongo | undefined;
  beforeAll(async () => {
    mongo = await startTestMongo(options);
  });
  afterAll(async () => {
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
      return new MongoStore({ ...base, database: m.newDatabaseName('store'), logger: quietLogger, ...overrides } as MongoStoreOptions);
    },
  };
  return fixture;
}

/** Tests assert on behaviour, not log lines; warnings still show up. */
export const quietLogger = {
  debug: () => {},
  warn: (obj: Record<string, unknown>, msg?: string) => console.warn(msg, obj),
  error: (obj: Record<string, unknown>, msg?: string) => console.error(msg, obj),
};
