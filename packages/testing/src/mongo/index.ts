/**
 * `@loom/testing/mongo`: the MongoDB every Loom test that needs one uses.
 *
 * ```ts
 * import { startTestMongo } from '@loom/testing/mongo';
 * const mongo = await startTestMongo();            // MONGODB_URI, else memory-server, else emulator
 * const store = new MongoStore({ client: mongo.client, database: mongo.newDatabaseName('jobs') });
 * afterAll(() => mongo.stop());
 * ```
 *
 * @packageDocumentation
 */
export {
  SHARED_TEST_MONGO_ENV,
  startSharedTestMongo,
  startTestMongo,
  type SharedTestMongo,
  type StartTestMongoOptions,
  type TestMongo,
  type TestMongoKind,
} from './test-mongo.js';
