import { describe, expect, it } from '@jest/globals';
import { MongoNetworkError, MongoServerError } from 'mongodb';
import { LeaseLostError } from '@loom/core';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// Issue 12, defect 1, on MongoDB: a dead letter that cannot hold the whole record is stored
// truncated, saying so (before: the move failed with 10334 on every try and the job stayed
// running); and the store tells final refusals from transient failures.

describe.each([['replica set', 'replica-set'] as const, ['standalone', 'standalone'] as const])('outcome limits on a %s', (_label, topology) => {
  const fixture = useMongoFixture({ topology });

  it('stores a dead letter too large for one document truncated, and its reason says what was dropped', async () => {
    // Payloads inline (no payload bucket): a job document near 16 MiB.
    const store = fixture.newStore({ offloadThreshold: false });
    await store.init();
    // A payload of 15.99 MiB is a legal job; with its final error the dead letter passes 16 MiB.
    const payload = { blob: 'p'.repeat(16 * 1024 * 1024 - 4096) };
    const [{ id }] = await store.enqueue([newJob({ payload })], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    const lease = { jobId: id, token: job!.lease!.token };
    const error = { attempt: 1, at: at(2), name: 'Error', message: 'e'.repeat(64 * 1024) };
    await store.deadLetter(lease, { reason: 'out of attempts', error, now: at(2) });

    const dead = await store.getJob(id);
    expect(dead?.status).toBe('dead');
    expect(dead?.payload).toBeNull();
    expect(dead?.deadReason).toMatch(/^out of attempts \[dead letter truncated: .*dropped result, progress, steps\.result, signals\.data, payload\]$/);
    expect(dead?.errors.at(-1)?.message).toHaveLength(64 * 1024);
    const [letter] = await store.listDeadLetters({});
    expect(letter?.reason).toMatch(/dead letter truncated/);
    // The job left the jobs collection: it is not stuck running.
    await expect(store.extendLease(lease, at(3), at(3))).rejects.toBeInstanceOf(LeaseLostError);
    await store.close();
  });

  it('keeps a dead letter that fits whole', async () => {
    const store = fixture.newStore();
    await store.init();
    const [{ id }] = await store.enqueue([newJob({ payload: { n: 7 } })], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    await store.deadLetter({ jobId: id, token: job!.lease!.token }, { reason: 'out of attempts', now: at(2) });
    expect(await store.getJob(id)).toMatchObject({ status: 'dead', payload: { n: 7 }, deadReason: 'out of attempts' });
    await store.close();
  });
});

describe('MongoStore.isTransientError', () => {
  const fixture = useMongoFixture();

  it('retries network trouble, failovers and write conflicts; not a document over the size limit', () => {
    const store = fixture.newStore();
    const server = (code: number, labels: string[] = []) => {
      const err = new MongoServerError({ message: `code ${code}`, code });
      for (const label of labels) err.addErrorLabel(label);
      return err;
    };
    expect(store.isTransientError(new MongoNetworkError('connection reset'))).toBe(true);
    expect(store.isTransientError(server(112))).toBe(true); // WriteConflict
    expect(store.isTransientError(server(10107))).toBe(true); // NotWritablePrimary
    expect(store.isTransientError(server(2, ['RetryableWriteError']))).toBe(true);
    expect(store.isTransientError(server(17419))).toBe(false); // document would grow past 16 MiB
    expect(store.isTransientError(server(10334))).toBe(false); // BSONObjectTooLarge
    expect(store.isTransientError(new TypeError('bug'))).toBe(false);
    // A socket's own error the driver let through unwrapped (a connection dropped while a command
    // waited for the socket to drain): the network, so the write is tried again.
    const socketError = Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET', syscall: 'write' });
    expect(store.isTransientError(socketError)).toBe(true);
    expect(store.isTransientError(Object.assign(new Error('no such file'), { code: 'ENOENT' }))).toBe(false);
  });
});
