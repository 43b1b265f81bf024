/**
 * One engine process of `loom selftest`'s chaos run; the CLI starts it with `process.execPath`.
 *
 * env: LOOM_SELFTEST_URI, LOOM_SELFTEST_DATABASE, LOOM_SELFTEST_PREFIX, LOOM_SELFTEST_OWNER,
 * LOOM_SELFTEST_TRANSACTIONS ('1' on a replica set or mongos).
 *
 * It works `selftest-chaos` jobs: each waits 50-200 ms (so a SIGKILL finds runs in
 * flight), then records its effect, inside `ctx.transaction` where transactions exist (the effect
 * then commits with the completion, so one job has exactly one effect however often it runs).
 * Prints READY once it claims, `SESSION <hex>` for each session it first runs a transaction in (so
 * that the parent can end them with killSessions after killing it), and stops gracefully on SIGTERM.
 */
import type { ClientSession } from 'mongodb';
import { Job, Loom, type JobContext } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { CHAOS_JOB, CHAOS_LEASE, effectsCollection, type ChaosEffect } from './chaos-job.js';

const env = process.env;
const uri = env.LOOM_SELFTEST_URI;
const database = env.LOOM_SELFTEST_DATABASE;
const prefix = env.LOOM_SELFTEST_PREFIX;
const owner = env.LOOM_SELFTEST_OWNER ?? `selftest:${process.pid}`;
if (!uri || !database || !prefix) throw new Error('chaos-worker needs LOOM_SELFTEST_URI, LOOM_SELFTEST_DATABASE and LOOM_SELFTEST_PREFIX');
const transactions = env.LOOM_SELFTEST_TRANSACTIONS === '1';

const quiet = {
  debug: () => {},
  warn: (_: unknown, msg?: string) => process.stderr.write(`warn: ${msg ?? ''}\n`),
  error: (_: unknown, msg?: string) => process.stderr.write(`error: ${msg ?? ''}\n`),
};
const store = new MongoStore({
  url: uri,
  database,
  collectionPrefix: prefix,
  logger: quiet,
  retention: { completed: false },
  pollInterval: '100ms',
  connectTimeout: '30s',
});
const effects = store.client.db(database).collection<ChaosEffect>(effectsCollection(prefix));

/** Sessions announced so far (the driver reuses a few pooled sessions for all transactions). */
const announced = new Set<string>();
function announce(session: ClientSession): void {
  const id = session.id?.id.toString('hex');
  if (id === undefined || announced.has(id)) return;
  announced.add(id);
  process.stdout.write(`SESSION ${id}\n`);
}

@Job({ name: CHAOS_JOB, retries: 10 })
class ChaosJob {
  async run(payload: { key: string }, ctx: JobContext): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 50 + Math.floor(Math.random() * 150)));
    const effect: ChaosEffect = { key: payload.key, jobId: ctx.jobId, attempt: ctx.attempt, owner };
    if (transactions) {
      await ctx.transaction(async (session) => {
        announce(session as ClientSession);
        await effects.insertOne(effect, { session: session as never });
      });
    } else {
      await effects.insertOne(effect);
    }
  }
}

const loom = await Loom.create({
  store,
  resolve: () => new ChaosJob(),
  jobs: [ChaosJob],
  concurrency: 4,
  lease: CHAOS_LEASE,
  pollInterval: '100ms',
  owner,
});
await loom.start();
process.stdout.write('READY\n');
process.once('SIGTERM', () => {
  void loom
    .stop()
    .then(() => store.close())
    .then(() => process.exit(0));
});
