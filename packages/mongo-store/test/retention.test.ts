import 'reflect-metadata';
import { describeRetentionScenarios, SCENARIO_RETENTION_DAYS } from '@loom/testing/jest';
import { useMongoFixture } from './fixture.js';

// Workflows against retention on MongoDB. Its TTL monitor judges age by the server's wall clock
// (the fake clock's dates mean nothing to it) and runs about once a minute, so the TTL index is
// off and the test removes, at the fake clock's `now`, exactly what that index would: completed
// jobs whose `finishedAt` is older than the retention (index loom_retention_completed: key
// finishedAt, partial { status: 'completed' }), and wait tokens settled before that (index
// loom_retention_tokens: key settledAt).
const mongo = useMongoFixture();
describeRetentionScenarios('MongoStore', () => {
  const database = mongo.mongo.newDatabaseName('retention');
  const store = mongo.newStore({ database, retention: { completed: false } });
  const jobs = mongo.mongo.client.db(database).collection('loom_jobs');
  const tokens = mongo.mongo.client.db(database).collection('loom_wait_tokens');
  const expireCompleted = async (now: Date): Promise<void> => {
    const cutoff = new Date(now.getTime() - SCENARIO_RETENTION_DAYS * 86_400_000);
    await jobs.deleteMany({ status: 'completed', finishedAt: { $lte: cutoff } });
    await tokens.deleteMany({ settledAt: { $lte: cutoff } });
  };
  return { store, expireCompleted };
});
