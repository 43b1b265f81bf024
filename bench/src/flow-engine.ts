/**
 * One engine process of the flow-control figures (`scenarios/flow-limits.ts`): Loom on MongoStore
 * with the flow-limited bench jobs, reporting the begin and end of each `bench-global` run
 * (wall-clock ms, sub-ms resolution) to its parent over IPC, until the parent says stop.
 * argv: uri, database, concurrency, and optionally the lease in ms (the kill phase).
 */
import 'reflect-metadata';
import { Container } from 'inversify';
import { Job, Loom, type JobContext } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { benchLogger } from './loom-jobs.js';

const now = (): number => performance.timeOrigin + performance.now();
const report = (message: unknown): void => void process.send?.(message);

/** 50 starts per second across every engine process. */
@Job({ name: 'bench-rate', retries: 0, rateLimit: { limit: 50, per: '1s' } })
export class RateLimited {
  async run(): Promise<void> {}
}

/** 8 running at once across every engine process; each run takes 50 ms (attempts: as enqueued by the scenario). */
@Job({ name: 'bench-global', retries: 0, globalConcurrency: 8 })
export class GlobalLimited {
  async run(_payload: unknown, ctx: JobContext): Promise<void> {
    const run = `${ctx.jobId}:${ctx.attempt}`;
    report({ t: 'begin', run, at: now() });
    await new Promise((resolve) => setTimeout(resolve, 50));
    report({ t: 'end', run, job: ctx.jobId, at: now() });
  }
}

const [uri, database, concurrency, leaseMs] = process.argv.slice(2) as [string, string, string, string | undefined];
const store = new MongoStore({ url: uri, database, logger: benchLogger });
const loom = await Loom.create({
  container: new Container(),
  store,
  jobs: [RateLimited, GlobalLimited],
  concurrency: Number(concurrency),
  logger: benchLogger,
  pollInterval: '200ms',
  ...(leaseMs === undefined ? {} : { lease: Number(leaseMs) }),
});
// Orphaned (the bench died): nobody reads the figures any more.
process.on('disconnect', () => process.exit(1));
process.on('message', (message: { t: string }) => {
  if (message.t !== 'stop') return;
  void loom
    .stop({ grace: '2s' })
    .then(() => store.close())
    .finally(() => process.exit(0));
});
await loom.start();
report({ t: 'ready' });
