import { describe, expect, it } from '@jest/globals';
import { useMongoFixture } from './fixture.js';
import { at, newJob } from './jobs.js';

/** Resolves with the first value `register` delivers, or rejects after `ms` (a deadline, not a sleep). */
function firstEvent<T>(register: (deliver: (value: T) => void) => () => void, ms = 10_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no event within ${ms} ms`));
    }, ms);
    const stop = register((value) => {
      clearTimeout(timer);
      stop();
      resolve(value);
    });
  });
}

describe('subscribe on a replica set', () => {
  const fixture = useMongoFixture();

  it('hears jobs enqueued through another client, with their queue and run time', async () => {
    const database = fixture.mongo.newDatabaseName('sub');
    const listening = fixture.newStore({ database });
    const other = fixture.newStore({ database, url: fixture.mongo.uri, client: undefined });
    await Promise.all([listening.init(), other.init()]);
    try {
      // The stream opens asynchronously: keep enqueueing until the listener hears one.
      const heard = firstEvent<{ id: string; queue: string; runAt: Date }>((deliver) => listening.subscribe(deliver));
      const inFlight: Promise<{ id: string }[]>[] = [];
      const pump = setInterval(() => inFlight.push(other.enqueue([newJob({ queue: 'emails', runAt: at(5) })], { now: at(0) })), 50);
      try {
        const event = await heard;
        expect(event).toEqual({ id: expect.any(String), queue: 'emails', runAt: at(5) });
        // The job's id, so an engine can tell the echo of its own enqueue from others' jobs.
        expect((await Promise.all(inFlight)).flat().map((r) => r.id)).toContain(event.id);
      } finally {
        clearInterval(pump);
        await Promise.all(inFlight); // none may still be running when the stores close
      }
    } finally {
      await Promise.all([listening.close(), other.close()]);
    }
  });
});

describe('subscribe on a standalone', () => {
  const fixture = useMongoFixture({ topology: 'standalone' });

  it('falls back to nothing (the engine polls) and unsubscribes cleanly', async () => {
    const debug: string[] = [];
    const store = fixture.newStore({ logger: { debug: (_o: object, m?: string) => void debug.push(m ?? ''), warn: () => {}, error: () => {} } });
    await store.init();
    const events: unknown[] = [];
    const unsubscribe = store.subscribe((e) => events.push(e));
    await store.enqueue([newJob()], { now: at(0) });
    await store.listJobs({}); // one more round trip: the fallback decision has been made by now
    expect(debug.some((m) => /replica set/.test(m))).toBe(true);
    expect(events).toEqual([]);
    unsubscribe();
    await store.close();
  });
});
