import { describeStoreConformance } from '@loom/testing/jest';
import { useMongoFixture } from './fixture.js';

// The JobStore contract on a replica set (transactions, change streams). Each test gets its own
// database; the fixture drops them all when the file ends. Retention is off: the suite's times are
// fixed in the past, and MongoDB's TTL monitor judges age by the server's wall clock.
const replicaSet = useMongoFixture();
// `peer` is a second store on the same database, as another process would open it.
describeStoreConformance('MongoStore (replica set)', () => {
  const database = replicaSet.mongo.newDatabaseName('store');
  return {
    store: replicaSet.newStore({ database, retention: { completed: false } }),
    peer: () => replicaSet.newStore({ database, retention: { completed: false } }),
  };
});
