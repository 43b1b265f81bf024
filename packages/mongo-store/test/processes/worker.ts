/**
 * A Loom process for the multi-process tests, run compiled (tsconfig.json here; children.ts builds it).
 *
 * env: MONGODB_URI, DATABASE, MODE
 * - `hang`: run `charge` jobs, record each run, then never finish (the test SIGKILLs us).
 * - `complete`: run `charge` jobs, record each run, finish.
 * - `crash-in-transaction`: write the side effect inside ctx.transaction, then die before it commits.
 * - `transaction`: write the side effect inside ctx.transaction, which also completes the job.
 * - `subscribe-close`: subscribe, hear one insert, close the store, print CLOSED and end by itself.
 * - `enqueue`: print ARMED, wait for a line on stdin, then enqueue `charge` for KEYS (comma-separated)
 *   all at once, print `RESULT <json>`, exit.
 */
import 'reflect-metadata';
import { Container } from 'inversify';
import { Job, Loom, type JobContext } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';

const { MONGODB_URI, DATABASE, MODE, KEYS = '' } = process.env;
if (!MONGODB_URI || !DATABASE || !MODE) throw new Error('worker.ts needs MONGODB_URI, DATABASE and MODE');

// connectTimeout: children start on a loaded machine; a slow first handshake is not an outage.
const store = new MongoStore({ url: MONGODB_URI, database: DATABASE, pollInterval: '100ms', connectTimeout: '60s' });
const db = store.client.db(DATABASE);

@Job({ name: 'charge', retries: 3 })
class Charge {
  async run(payload: { order: string }, ctx: JobContext): Promise<void> {
    await db.collection('runs').insertOne({ jobId: ctx.jobId, attempt: ctx.attempt, pid: process.pid, mode: MODE, order: payload.order });
    if (MODE === 'hang') await new Promise(() => {});
    if (MODE === 'crash-in-transaction' || MODE === 'transaction') {
      await ctx.transaction(async (session) => {
        await db.collection('effects').insertOne({ jobId: ctx.jobId, order: payload.order, pid: process.pid }, { session: session as never });
        // Dies with the transaction open: neither the effect nor the completion may commit.
        if (MODE === 'crash-in-transaction') process.kill(process.pid, 'SIGKILL');
      });
    }
  }
}

if (MODE === 'subscribe-close') {
  // Hears one insert through the change stream, closes the store and returns: the process must
  // then end by itself (nothing the store started may keep it alive).
  await store.init();
  const inFlight: Promise<unknown>[] = [];
  await new Promise<void>((resolve) => {
    const pump = setInterval(() => {
      const job = { name: 'charge', queue: 'default', payload: { order: 'ping' }, priority: 0, runAt: new Date(), maxAttempts: 1 };
      inFlight.push(store.enqueue([job], { now: new Date() }));
    }, 100);
    const unsubscribe = store.subscribe(() => {
      clearInterval(pump);
      unsubscribe();
      resolve();
    });
  });
  await Promise.all(inFlight);
  await store.close();
  process.stdout.write('CLOSED\n');
} else {
  await runEngine();
}

async function runEngine(): Promise<void> {
  const loom = await Loom.create({
    container: new Container(),
    store,
    jobs: [Charge],
    concurrency: 1,
    lease: '1500ms',
    pollInterval: '100ms',
    owner: `${MODE}:${process.pid}`,
  });

  if (MODE === 'enqueue') {
    const keys = KEYS.split(',').filter(Boolean);
    // Both enqueuing processes start slowly; they race only once the test says GO to both.
    process.stdout.write('ARMED\n');
    await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
    const results = await Promise.all(keys.map((key) => loom.enqueue(Charge, { order: key }, { idempotencyKey: key })));
    process.stdout.write(`RESULT ${JSON.stringify(results)}\n`);
    await store.close();
  } else {
    await loom.start();
    process.stdout.write('READY\n');
    process.once('SIGTERM', () => void loom.stop().then(() => store.close()));
  }
}
