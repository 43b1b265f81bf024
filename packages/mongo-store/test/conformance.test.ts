import { describeStoreConformance } from '@loom/testing/jest';
import { useMongoFixture } from './fixture.js';

// The JobStore contract on a replica set (transactions, change streams). Each test gets its own
// database; the fixture drops them all when the file ends. Retention is off: the suite's times are
// fixed in the past, and MongoDB's TTL monitor judges age by the server's wall clock.
const replicaSet = useMongoFixture();
describeStoreConformance('MongoStore (replica set)', () => ({ store: replicaSet.newStore({ retention: { completed: false } }) }));
