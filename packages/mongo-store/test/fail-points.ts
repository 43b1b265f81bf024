import { afterEach, it } from '@jest/globals';
import type { Document, MongoClient } from 'mongodb';
import type { MongoStore, MongoStoreOptions } from '../src/index.js';
import { useMongoFixture, type MongoFixture } from './fixture.js';

/**
 * Server fail points (`configureFailPoint`), for tests that need the server to fail at a precise
 * moment: the in-process emulator has them, and so has a real mongod started with
 * `--setParameter enableTestCommands=1` (MongoDB's own driver test setups do). Against a server
 * without them these tests say so on stderr and do nothing.
 */
export interface FailPoints {
  /** Arms a fail point; `off()` disarms every fail point armed through this object. */
  set(name: 'failCommand' | 'onPrimaryTransactionalWrite', mode: 'alwaysOn' | { times: number } | { skip: number }, data?: Document): Promise<void>;
  off(): Promise<void>;
}

export function failPointsOn(client: () => MongoClient): FailPoints {
  const armed = new Set<string>();
  return {
    async set(name, mode, data = {}) {
      await client().db('admin').command({ configureFailPoint: name, mode, data });
      armed.add(name);
    },
    async off() {
      for (const name of armed) await client().db('admin').command({ configureFailPoint: name, mode: 'off' });
      armed.clear();
    },
  };
}

async function available(client: MongoClient): Promise<boolean> {
  try {
    await client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 59) return false;
    throw err;
  }
}

/** `it`, run only where the server has fail points (see above). */
export function itWithFailPoints(client: () => MongoClient): (name: string, fn: () => Promise<void>, timeout?: number) => void {
  return (name, fn, timeout) =>
    it(
      name,
      async () => {
        if (!(await available(client()))) {
          process.stderr.write(
            `[fail points] not run, the test server has no configureFailPoint (start mongod with --setParameter enableTestCommands=1): ${name}\n`,
          );
          return;
        }
        await fn();
      },
      timeout,
    );
}

/**
 * The fixture of a test file that arms fail points: a MongoDB of its own (fail points act
 * server-wide, so never on a server other files share), its fail points (disarmed after each
 * test), `it` run only where the server has them, and `storeOf`: a store on its own connection
 * named `appName` (what a fail point's `appName` picks out), closed after the test.
 */
export function useFailPointFixture(): {
  fixture: MongoFixture;
  failPoints: FailPoints;
  itFp: ReturnType<typeof itWithFailPoints>;
  storeOf: (appName: string, options?: Partial<MongoStoreOptions>) => MongoStore;
} {
  const fixture = useMongoFixture({ ownServer: true });
  const client = (): MongoClient => fixture.mongo.client;
  const failPoints = failPointsOn(client);
  const opened: MongoStore[] = [];
  afterEach(async () => {
    await failPoints.off();
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });
  const storeOf = (appName: string, options: Partial<MongoStoreOptions> = {}): MongoStore => {
    const store = fixture.newStore({ url: fixture.mongo.uri, client: undefined, clientOptions: { appName }, ...options });
    opened.push(store);
    return store;
  };
  return { fixture, failPoints, itFp: itWithFailPoints(client), storeOf };
}
