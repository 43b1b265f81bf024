import 'reflect-metadata';
import { BSON, type CommandStartedEvent, type CommandSucceededEvent, type Document } from 'mongodb';
import { Job, type JobPageQuery } from '@loom/core';
import { Countdown } from '../countdown.js';
import { openLoomOnMongo } from '../loom-on-mongo.js';
import { median } from '../stats.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';
import { figures, measure } from './throughput.js';

type PayloadSpec = Extract<ScenarioSpec, { kind: 'payload' }>;

/** Reads its payload as a handler does (the blob's length), returns nothing. */
@Job({ name: 'bench-payload', retries: 0 })
export class PayloadJob {
  async run(payload: { i: number; blob: string }): Promise<void> {
    if (payload.blob.length === 0) throw new Error('bench-payload: the payload was not loaded');
  }
}

/** Reply bytes and commands per collection, from the driver's command monitoring. */
class ReplyBytes {
  private readonly collectionOf = new Map<number, string>();
  bytes = new Map<string, number>();
  commands = 0;

  constructor(client: { on(event: string, listener: (e: never) => void): unknown }) {
    client.on('commandStarted', (e: CommandStartedEvent) => {
      const target = (e.command as Document)[e.commandName] as unknown;
      this.collectionOf.set(e.requestId, typeof target === 'string' ? target : e.commandName);
      this.commands++;
    });
    client.on('commandSucceeded', (e: CommandSucceededEvent) => {
      const collection = this.collectionOf.get(e.requestId) ?? 'other';
      this.collectionOf.delete(e.requestId);
      this.bytes.set(collection, (this.bytes.get(collection) ?? 0) + BSON.calculateObjectSize(e.reply as Document));
    });
  }

  reset(): void {
    this.bytes.clear();
    this.commands = 0;
  }

  of(prefix: string): number {
    let n = 0;
    for (const [collection, b] of this.bytes) if (collection.startsWith(prefix)) n += b;
    return n;
  }
}

/**
 * Issue 33, item 4: jobs whose payload is `payloadKb` KiB on MongoStore (its `offloadThreshold`
 * as given: the default 256 KiB, or 1 KiB so every size is offloaded). Throughput and the worker's
 * CPU and peak memory over `jobs` jobs enqueued one by one, then the cost of one claim of one
 * job and of one list page (50 completed jobs): commands, reply bytes of the jobs collection (what
 * a claim or a page reads of the job documents) and of the payload bucket, and milliseconds.
 */
export async function payloadCost(spec: PayloadSpec): Promise<ScenarioResult> {
  const blob = 'x'.repeat(spec.payloadKb * 1024 - 40);
  const h = await openLoomOnMongo(spec, [PayloadJob], spec.concurrency, spec.offloadThreshold === undefined ? {} : { offloadThreshold: spec.offloadThreshold });
  const done = new Countdown(spec.jobs, 'payload completions');
  h.loom.on('job:completed', () => done.tick());
  const phases = await measure(
    spec,
    h.counter,
    async () => {
      for (let i = 0; i < spec.jobs; i++) await h.loom.enqueue(PayloadJob, { i, blob });
    },
    () => h.loom.start(),
    done,
  );
  await h.loom.stop({ grace: '5s' });
  const result = figures(spec.jobs, phases);
  const heapMb = process.memoryUsage().heapUsed / (1024 * 1024);

  // One claim of one job at a time, straight on the store (no engine), then list pages.
  const replies = new ReplyBytes(h.counter.client as never);
  const store = h.store;
  const claims = Math.min(spec.claims, spec.jobs);
  await store.enqueue(
    Array.from({ length: claims }, (_, i) => ({
      name: 'bench-payload',
      queue: 'default',
      payload: { i, blob },
      priority: 0,
      runAt: new Date(),
      maxAttempts: 1,
    })),
    { now: new Date() },
  );
  const claimMs: number[] = [];
  replies.reset();
  for (let i = 0; i < claims; i++) {
    const now = new Date();
    const t0 = performance.now();
    const [job] = await store.claim({
      owner: 'bench',
      queues: ['default'],
      names: ['bench-payload'],
      limit: 1,
      leaseUntil: new Date(now.getTime() + 60_000),
      now,
    });
    claimMs.push(performance.now() - t0);
    if ((job?.payload as { blob?: string } | undefined)?.blob?.length !== blob.length) throw new Error('payload: a claim returned no payload');
  }
  const claimCommands = replies.commands / claims;
  const claimJobsBytes = replies.of('loom_jobs') / claims;
  const claimBucketBytes = replies.of('loom_payloads') / claims;
  const page: JobPageQuery = { statuses: ['completed'], limit: 50 };
  const listMs: number[] = [];
  replies.reset();
  for (let i = 0; i < spec.listReps; i++) {
    const t0 = performance.now();
    const jobs = await store.listJobPage(page);
    listMs.push(performance.now() - t0);
    if (jobs.length === 0) throw new Error('payload: the list page is empty');
  }
  const listCommands = replies.commands / spec.listReps;
  const listBytes = replies.of('loom_jobs') / spec.listReps;
  await h.close();
  return {
    ...result,
    metrics: {
      ...result.metrics,
      heapMb,
      claimMs: median(claimMs),
      claimCommands,
      claimJobsReplyBytes: claimJobsBytes,
      claimBucketReplyBytes: claimBucketBytes,
      listMs: median(listMs),
      listCommands,
      listReplyBytes: listBytes,
    },
  };
}
