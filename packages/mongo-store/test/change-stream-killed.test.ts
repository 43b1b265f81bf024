import { afterEach, describe, expect } from '@jest/globals';
import type { MongoStore } from '../src/index.js';
import { useFailPointFixture } from './fail-points.js';
import { at, newJob } from './jobs.js';
import { waitUntil } from './wait-until.js';

// The change stream that wakes idle workers, killed in the middle: whether the driver resumes it
// by itself or the store has to reopen it, every job enqueued meanwhile must still be heard.
const { fixture, failPoints, itFp } = useFailPointFixture();
const LISTENER = 'loom-stream-listener';

const stores: MongoStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

interface Listening {
  heard: string[];
  warnings: string[];
  enqueue(queue: string): Promise<void>;
}

/** A listening store (its own client, named for fail points) and another that enqueues. */
async function listening(): Promise<Listening> {
  const database = fixture.mongo.newDatabaseName('stream');
  const warnings: string[] = [];
  const listener = fixture.newStore({
    database,
    url: fixture.mongo.uri,
    client: undefined,
    clientOptions: { appName: LISTENER },
    logger: { debug: () => {}, warn: (_o: object, m?: string) => void warnings.push(m ?? ''), error: () => {} },
  });
  const other = fixture.newStore({ database });
  stores.push(listener, other);
  await Promise.all([listener.init(), other.init()]);
  const heard: string[] = [];
  listener.subscribe(({ queue }) => heard.push(queue));
  const enqueue = async (queue: string) => {
    await other.enqueue([newJob({ queue })], { now: at(0) });
  };
  // The stream opens asynchronously: enqueue until one is heard, so the stream is known to be open.
  let n = 0;
  await waitUntil(
    async () => {
      await enqueue(`warmup-${n++}`);
      return heard.length > 0;
    },
    10_000,
    'the change stream to open',
  );
  return { heard, warnings, enqueue };
}

describe('the job change stream killed mid-stream', () => {
  itFp('with a resumable error (its cursor gone): the driver resumes it, no enqueue is missed', async () => {
    const l = await listening();
    await failPoints.set('failCommand', { times: 1 }, { failCommands: ['getMore'], errorCode: 43, appName: LISTENER });
    for (const q of ['a', 'b', 'c']) await l.enqueue(q);
    await waitUntil(async () => ['a', 'b', 'c'].every((q) => l.heard.includes(q)), 10_000, 'every enqueue to be heard');
  });

  itFp('with an error the driver does not resume: the store reopens it where it stopped, no enqueue is missed', async () => {
    const l = await listening();
    // Interrupted (11601) is not resumable: the stream fails and the store must reopen it; the
    // fail point also fails the reopening aggregates until it is switched off.
    await failPoints.set('failCommand', 'alwaysOn', { failCommands: ['getMore', 'aggregate'], errorCode: 11601, appName: LISTENER });
    await waitUntil(async () => l.warnings.some((w) => /change stream failed/.test(w)), 10_000, 'the stream to fail');
    for (const q of ['d', 'e', 'f']) await l.enqueue(q);
    await failPoints.off();
    await waitUntil(async () => ['d', 'e', 'f'].every((q) => l.heard.includes(q)), 15_000, 'the enqueues made while the stream was down to be heard');
    expect(l.heard.filter((q) => ['d', 'e', 'f'].includes(q))).toEqual(['d', 'e', 'f']);
  });
});
