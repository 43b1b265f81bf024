import { describeStoreConformance } from '@loom/testing/jest';
import { useMongoFixture } from './fixture.js';

// ... and on a standalone, where dead-letter moves and replays take the two-step path.
const standalone = useMongoFixture({ topology: 'standalone' });
// Retention off, as in conformance.test.ts.
describeStoreConformance(
  'MongoStore (standalone)',
  () => {
    const database = standalone.mongo.newDatabaseName('store');
    return {
      store: standalone.newStore({ database, retention: { completed: false } }),
      peer: () => standalone.newStore({ database, retention: { completed: false } }),
    };
  },
  { transactions: false },
);
