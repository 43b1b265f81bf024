import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Countdown } from '../countdown.js';
import { RedisCommandCounter } from '../redis-command-counter.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';
import { figures, measure } from './throughput.js';
import { coldRoundTripMs, completionCounters, steadyRate } from './latency.js';

type BullThroughputSpec = Extract<ScenarioSpec, { kind: 'bullmq-throughput' }>;
type BullLatencySpec = Extract<ScenarioSpec, { kind: 'bullmq-latency' }>;

/**
 * BullMQ on the redis-server the benchmark started: a Queue and a Worker in this process, with
 * their defaults except the worker's concurrency (completed jobs are kept, as Loom and Agenda keep
 * them). Each run uses a queue of its own, emptied first.
 */
async function openBull(spec: { redisPort: number }, processor: (job: Job) => Promise<void>, concurrency: number) {
  const counter = new RedisCommandCounter();
  const connection = { host: '127.0.0.1', port: spec.redisPort, maxRetriesPerRequest: null };
  const name = `bench-${process.pid}`;
  const queue = new Queue(name, { connection });
  await queue.obliterate({ force: true });
  const worker = new Worker(name, processor, { connection, concurrency, autorun: false });
  worker.on('error', (err) => console.error('[bench] bullmq worker error:', err));
  return {
    queue,
    worker,
    counter,
    /** Starts processing (the promise `run()` returns settles only when the worker closes). */
    start: async () => {
      void worker.run().catch((err: unknown) => console.error('[bench] bullmq worker stopped:', err));
      await worker.waitUntilReady();
    },
    async close() {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    },
  };
}

/** N jobs added one `queue.add` at a time, then the worker started with concurrency N. */
export async function bullmqThroughput(spec: BullThroughputSpec): Promise<ScenarioResult> {
  const done = new Countdown(spec.jobs, 'bullmq completions');
  const h = await openBull(spec, async () => {}, spec.concurrency);
  h.worker.on('completed', () => done.tick());
  const enqueue = async () => {
    for (let i = 0; i < spec.jobs; i++) await h.queue.add('bench-noop', { i });
  };
  const phases = await measure({ ...spec, serverPid: spec.redisPid }, h.counter, enqueue, h.start, done);
  await h.close();
  return figures(spec.jobs, phases);
}

/** The worker running and warm; jobs added at a steady rate; enqueue → processor start. */
export async function bullmqLatency(spec: BullLatencySpec): Promise<ScenarioResult> {
  const samples: number[] = [];
  const counters = completionCounters(spec.jobs, 'bullmq');
  const h = await openBull(
    spec,
    async (job: Job<{ t0: number }>) => {
      samples.push(performance.now() - job.data.t0);
    },
    50,
  );
  h.worker.on('completed', counters.onCompleted);
  await h.start();
  const result = await steadyRate({ ...spec, serverPid: spec.redisPid }, h.counter, samples, counters, (t0) => h.queue.add('bench-latency', { t0 }));
  // A client of BullMQ's own kind (ioredis), apart from the queue's, for the no-op round trips.
  const probe = new Redis({ host: '127.0.0.1', port: spec.redisPort });
  result.metrics.coldRoundTripP50Ms = await coldRoundTripMs(spec, () => probe.ping());
  probe.disconnect();
  await h.close();
  return result;
}
