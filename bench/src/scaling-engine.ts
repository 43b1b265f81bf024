/**
 * One engine process of the scaling curves (`scenarios/scaling.ts`): Loom on MongoStore serving
 * `queues` job classes (`scale-0` on queue `scale-q0`, …), built in a loop by applying `@Job` to
 * fresh classes. It starts when the parent says go and reports its completions and its CPU time
 * since go every 20 ms over IPC, until the parent says stop.
 * argv: uri, database, concurrency, queues.
 */
import 'reflect-metadata';
import { Container } from 'inversify';
import { Loom } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { benchLogger } from './loom-jobs.js';
import { scalingJobClasses } from './scaling-jobs.js';

/** Messages to the parent. */
export type ScalingEngineMessage = { t: 'ready' } | { t: 'progress'; completed: number; cpuMs: number };

async function main(): Promise<void> {
  const [uri, database, concurrency, queues] = process.argv.slice(2) as [string, string, string, string];
  const store = new MongoStore({ url: uri, database, logger: benchLogger });
  const loom = await Loom.create({
    container: new Container(),
    store,
    jobs: scalingJobClasses(Number(queues)),
    concurrency: Number(concurrency),
    logger: benchLogger,
  });
  let completed = 0;
  loom.on('job:completed', () => completed++);
  const send = (m: ScalingEngineMessage): void => void process.send?.(m);
  let cpu0: NodeJS.CpuUsage | undefined;
  let sent = -1;
  const progress = setInterval(() => {
    if (cpu0 === undefined || completed === sent) return;
    sent = completed;
    const used = process.cpuUsage(cpu0);
    send({ t: 'progress', completed, cpuMs: (used.user + used.system) / 1000 });
  }, 20);
  // Orphaned (the bench died): nobody reads the figures any more.
  process.on('disconnect', () => process.exit(1));
  process.on('message', (message: { t: string }) => {
    if (message.t === 'go') {
      cpu0 = process.cpuUsage();
      void loom.start();
    }
    if (message.t === 'stop') {
      clearInterval(progress);
      void loom
        .stop({ grace: '2s' })
        .then(() => store.close())
        .finally(() => process.exit(0));
    }
  });
  send({ t: 'ready' });
}

await main();
