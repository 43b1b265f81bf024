import { describe, expect, it } from '@jest/globals';
import { LoomError, MemoryStore, type CompletionItem, type JobStore } from '@loom/core';
import { FakeClock } from '@loom/testing';
import { CompletionBatch } from '../src/engine/completion-batch.js';

const at = (ms: number): Date => new Date(Date.UTC(2026, 0, 1) + ms);

/** A MemoryStore that records the size of each completeMany and holds the first one until released. */
function heldStore(): { store: JobStore; memory: MemoryStore; batches: number[]; release: () => void } {
  const memory = new MemoryStore();
  const batches: number[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const store = new Proxy(memory, {
    get(target, prop, receiver) {
      if (prop !== 'completeMany') return Reflect.get(target, prop, receiver) as unknown;
      return async (items: CompletionItem[], now: Date) => {
        batches.push(items.length);
        if (batches.length === 1) await gate;
        return target.completeMany(items, now);
      };
    },
  });
  return { store, memory, batches, release };
}

async function claimed(memory: MemoryStore, n: number, leaseMs = 30_000) {
  await memory.enqueue(
    Array.from({ length: n }, (_, i) => ({ name: 'j', queue: 'q', payload: { i }, priority: 0, runAt: at(0), maxAttempts: 3 })),
    { now: at(0) },
  );
  return memory.claim({ owner: 'w', queues: ['q'], names: ['j'], limit: n, leaseUntil: at(leaseMs), now: at(0) });
}

/** The next turn of the event loop (after the batch's own `setImmediate`, registered before it). */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('CompletionBatch (group commit of completions)', () => {
  it('sends the completions of one turn of the event loop together, and groups the ones arriving while a batch is written', async () => {
    const { store, memory, batches, release } = heldStore();
    const [a, b, c, d] = await claimed(memory, 4);
    const batch = new CompletionBatch({ store, clock: new FakeClock(at(1)), leaseMs: 30_000 });
    const complete = (jobs: (typeof a)[]) => jobs.map((job) => batch.complete({ jobId: job.id, token: job.lease!.token }, job.id));
    // a and b end in the same turn (as the runs of one claim do): one completeMany of both.
    const first = complete([a, b]);
    await Promise.resolve();
    expect(batches).toEqual([]);
    await nextTurn();
    expect(batches).toEqual([2]);
    // c and d arrive while that batch is written (it hangs): they wait, and go together after it.
    const second = complete([c, d]);
    await nextTurn();
    expect(batches).toEqual([2]);
    release();
    await Promise.all([...first, ...second]);
    expect(batches).toEqual([2, 2]);
    for (const job of [a, b, c, d]) expect(await memory.getJob(job.id)).toMatchObject({ status: 'completed', result: job.id });
  });

  it('rejects only the completion whose lease was taken over (LEASE_LOST) or whose cancel was requested (CANCELLED); the others commit', async () => {
    const memory = new MemoryStore();
    const [a, b, c] = await claimed(memory, 3, 1_000);
    // b's lease runs out and another worker takes it over; c's cancel is requested.
    await memory.extendLease({ jobId: a.id, token: a.lease!.token }, at(60_000), at(500));
    await memory.extendLease({ jobId: c.id, token: c.lease!.token }, at(60_000), at(500));
    const [taken] = await memory.claim({ owner: 'other', queues: ['q'], names: ['j'], limit: 1, leaseUntil: at(90_000), now: at(2_000) });
    expect(taken!.id).toBe(b.id);
    await memory.cancelJob(c.id, { now: at(2_000) });
    const batch = new CompletionBatch({ store: memory, clock: new FakeClock(at(3_000)), leaseMs: 30_000 });
    const settled = await Promise.allSettled([a, b, c].map((job) => batch.complete({ jobId: job.id, token: job.lease!.token }, 'r')));
    expect(settled[0]!.status).toBe('fulfilled');
    expect(LoomError.is((settled[1] as PromiseRejectedResult).reason, 'LEASE_LOST')).toBe(true);
    expect(LoomError.is((settled[2] as PromiseRejectedResult).reason, 'CANCELLED')).toBe(true);
    expect(await memory.getJob(b.id)).toMatchObject({ status: 'running', lease: { owner: 'other' } });
    expect(await memory.getJob(c.id)).toMatchObject({ status: 'running' });
  });

  it('gives each waiting completion up at its own deadline (StoreTimeoutError), on one timer, and sends it all the same', async () => {
    const { store, memory, batches, release } = heldStore();
    const [a, b, c] = await claimed(memory, 3);
    const clock = new FakeClock(at(1));
    const batch = new CompletionBatch({ store, clock, leaseMs: 30_000 });
    const outcome = (p: Promise<void>) =>
      p.then(
        () => 'committed',
        (err: unknown) => (LoomError.is(err, 'STORE_TIMEOUT') ? (err as Error).message : err),
      );
    // a is sent and hangs; b and c wait behind it with deadlines of 1 s and 3 s.
    const first = outcome(batch.complete({ jobId: a.id, token: a.lease!.token }, 'a', 5_000));
    await nextTurn();
    const second = outcome(batch.complete({ jobId: b.id, token: b.lease!.token }, 'b', 1_000));
    const third = outcome(batch.complete({ jobId: c.id, token: c.lease!.token }, 'c', 3_000));
    expect(clock.pendingTimers()).toBe(2); // the deadline timer, and the hung batch's own (one lease)
    clock.advance(1_000);
    expect(await second).toBe('store.complete did not answer within 1000 ms; the engine stopped waiting for it');
    clock.advance(2_000);
    expect(await third).toBe('store.complete did not answer within 3000 ms; the engine stopped waiting for it');
    release();
    expect(await first).toBe('committed');
    await nextTurn();
    // b and c went in the next batch all the same: fenced, a completion that lands late counts.
    expect(batches).toEqual([1, 2]);
    expect(await memory.getJob(c.id)).toMatchObject({ status: 'completed', result: 'c' });
    expect(clock.pendingTimers()).toBe(0);
  });
});
