import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { MongoClient, MongoServerError, type CommandFailedEvent, type Collection, type Document, type ObjectId } from 'mongodb';
import { MongoEmulator } from '../src/index.js';
import { serverError } from './target.js';

// A step-down as a replica-set election makes a primary do (MongoDB manual, replSetStepDown and
// "Replica Set Elections"; server: repl/replication_coordinator_impl.cpp). Since 4.2 the member
// keeps its connections and kills the operations in progress that write or wait
// (InterruptedDueToReplStateChange, 11602), aborts open transactions, refuses writes with
// NotWritablePrimary (10107) and reads without a secondary read preference with
// NotPrimaryNoSecondaryOk (13435), both retryable (RetryableWriteError on retryable writes), and
// `hello` reports it a secondary with no primary. After the step-down period a one-member set
// elects it again, under a new term. The emulator also kills change stream cursors (their
// awaiting getMore fails with 11602, ResumableChangeStreamError), so drivers resume them.
// These suites are about the emulator's own controls (stepDown/stepUp), so they always run on it.
let emu: MongoEmulator;
let client: MongoClient;
let coll: Collection<Document>;
beforeEach(async () => {
  emu = await MongoEmulator.start({ port: 0, ttlIntervalMs: 0 });
  client = new MongoClient(emu.uri, { monitorCommands: true, serverSelectionTimeoutMS: 15_000 });
  await client.connect();
  coll = client.db('stepdown').collection('c');
});
afterEach(async () => {
  await client.close();
  await emu.stop();
});

/** The next failure of command `name` the driver reports (it saw the server's reply). */
function failure(name: string): Promise<MongoServerError> {
  return new Promise((resolve) => {
    const listener = (e: CommandFailedEvent) => {
      if (e.commandName !== name) return;
      client.off('commandFailed', listener);
      resolve(e.failure as MongoServerError);
    };
    client.on('commandFailed', listener);
  });
}

/** Resolves once the driver has sent command `name`. */
function sent(name: string): Promise<void> {
  return new Promise((resolve) => {
    const listener = (e: { commandName: string }) => {
      if (e.commandName !== name) return;
      client.off('commandStarted', listener);
      resolve();
    };
    client.on('commandStarted', listener);
  });
}

/** A few round trips on other connections, so a command sent before them has reached the server. */
async function roundTrips(): Promise<void> {
  for (let i = 0; i < 3; i++) await client.db('admin').command({ ping: 1 }, { readPreference: 'secondaryPreferred' });
}

const secondaryOk = { readPreference: 'secondaryPreferred' } as const;

describe('a step-down', () => {
  it('makes hello report no primary, and a higher electionId once primary again', async () => {
    const admin = client.db('admin');
    const before = await admin.command({ hello: 1 });
    const report = emu.stepDown();
    expect(emu.isPrimary).toBe(false);
    const during = await admin.command({ hello: 1 }, secondaryOk);
    expect(during).toMatchObject({ isWritablePrimary: false, secondary: true, setName: before.setName as string });
    expect(during.primary).toBeUndefined();
    expect((await admin.command({ replSetGetStatus: 1 }, secondaryOk)).myState).toBe(2);
    emu.stepUp();
    expect((await report).ms).toBeGreaterThanOrEqual(0);
    const after = await admin.command({ hello: 1 });
    expect(after.isWritablePrimary).toBe(true);
    expect((after.electionId as ObjectId).toHexString() > (before.electionId as ObjectId).toHexString()).toBe(true);
  });

  it('lets a retryable write refused with NotWritablePrimary succeed, written once, when primary again', async () => {
    const report = emu.stepDown();
    const refused = failure('insert');
    const insert = coll.insertOne({ _id: 1 as never });
    const err = await refused;
    expect(err.code).toBe(10107);
    expect(err.hasErrorLabel('RetryableWriteError')).toBe(true);
    emu.stepUp();
    await insert;
    expect(await coll.countDocuments()).toBe(1);
    expect(emu.commandCounts().insert).toBe(2);
    expect((await report).refused).toBeGreaterThanOrEqual(1);
  });

  it('refuses a read without a secondary read preference with NotPrimaryNoSecondaryOk and serves one with it', async () => {
    await coll.insertOne({ _id: 1 as never });
    const report = emu.stepDown();
    expect(await coll.findOne({}, secondaryOk)).toEqual({ _id: 1 });
    // runCommand is not a retryable read: the driver hands the server's refusal back as it is.
    const err = await serverError(client.db('stepdown').command({ count: 'c' }));
    expect(err.code).toBe(13435);
    expect(err.codeName).toBe('NotPrimaryNoSecondaryOk');
    emu.stepUp();
    await report;
  });

  it('interrupts a write waiting for a transaction (11602) and aborts the transaction', async () => {
    await coll.insertOne({ _id: 1 as never, n: 0 });
    const session = client.startSession();
    try {
      session.startTransaction();
      await coll.updateOne({ _id: 1 as never }, { $inc: { n: 1 } }, { session });
      const interrupted = failure('update');
      const started = sent('update');
      const blocked = coll.updateOne({ _id: 1 as never }, { $inc: { n: 10 } });
      await started;
      await roundTrips();
      const report = emu.stepDown();
      const err = await interrupted;
      expect(err.code).toBe(11602);
      expect(err.hasErrorLabel('RetryableWriteError')).toBe(true);
      emu.stepUp();
      expect(await report).toMatchObject({ interrupted: 1, transactionsAborted: 1 });
      await blocked;
      expect((await coll.findOne({ _id: 1 as never }))?.n).toBe(10);
      const commit = await serverError(session.commitTransaction());
      expect(commit.code).toBe(251);
    } finally {
      await session.endSession();
    }
  });

  it('interrupts a change stream, which resumes from its token without losing or repeating events', async () => {
    const stream = coll.watch();
    try {
      const opened = sent('aggregate');
      await stream.tryNext();
      await opened;
      await coll.insertOne({ _id: 1 as never });
      expect((await stream.next()) as Document).toMatchObject({ documentKey: { _id: 1 } });
      const aggregates = { n: 0 };
      client.on('commandStarted', (e) => void (e.commandName === 'aggregate' && aggregates.n++));
      const waiting = sent('getMore');
      const second = stream.next();
      await waiting;
      await roundTrips();
      const interrupted = failure('getMore');
      const report = emu.stepDown();
      const getMoreError = await interrupted;
      expect(getMoreError.code).toBe(11602);
      expect(getMoreError.hasErrorLabel('ResumableChangeStreamError')).toBe(true);
      emu.stepUp();
      // Written as soon as the driver sees the primary again, before or after the stream resumes.
      await coll.insertOne({ _id: 2 as never });
      await coll.insertOne({ _id: 3 as never });
      expect((await second) as Document).toMatchObject({ operationType: 'insert', documentKey: { _id: 2 } });
      expect((await stream.next()) as Document).toMatchObject({ operationType: 'insert', documentKey: { _id: 3 } });
      expect(aggregates.n).toBe(1);
      expect((await report).changeStreamsInterrupted).toBe(1);
    } finally {
      await stream.close();
    }
  });

  it('can close every connection too; the driver reconnects once primary again', async () => {
    await coll.insertOne({ _id: 1 as never });
    const report = emu.stepDown(undefined, { closeConnections: true });
    const refused = failure('insert');
    const insert = coll.insertOne({ _id: 2 as never });
    // The first attempt meets the closed connection (a network error) or, on a new one, the
    // secondary's NotWritablePrimary; either way the driver retries it.
    const first = await refused;
    expect(first.name === 'MongoNetworkError' || first.code === 10107).toBe(true);
    emu.stepUp();
    await insert;
    await report;
    expect(await coll.countDocuments()).toBe(2);
  });
});

describe('replSetStepDown', () => {
  it('steps down for its seconds with force: true, then is primary again', async () => {
    const admin = client.db('admin');
    expect((await admin.command({ replSetStepDown: 1, secondaryCatchUpPeriodSecs: 0, force: true })).ok).toBe(1);
    expect((await admin.command({ hello: 1 }, secondaryOk)).isWritablePrimary).toBe(false);
    // The write waits for a primary (the driver's server selection) and lands once it is back.
    await coll.insertOne({ _id: 1 as never });
    expect(emu.isPrimary).toBe(true);
  });

  it('refuses to step down a one-member set without force (no electable secondary): ExceededTimeLimit', async () => {
    const err = await serverError(client.db('admin').command({ replSetStepDown: 10, secondaryCatchUpPeriodSecs: 0 }));
    expect(err.code).toBe(262);
    expect(emu.isPrimary).toBe(true);
  });

  it('is NoReplicationEnabled on a standalone, and admin-only', async () => {
    expect((await serverError(client.db('other').command({ replSetStepDown: 10, force: true }))).code).toBe(13);
    const standalone = await MongoEmulator.start({ port: 0, replicaSet: false, ttlIntervalMs: 0 });
    const direct = new MongoClient(standalone.uri);
    try {
      expect((await serverError(direct.db('admin').command({ replSetStepDown: 10, force: true }))).code).toBe(76);
      expect(() => standalone.stepDown(10)).toThrow(expect.objectContaining({ code: 76 }));
    } finally {
      await direct.close();
      await standalone.stop();
    }
  });
});
