import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoClient, MongoServerError } from 'mongodb';
import { MongoEmulator } from '../src/index.js';
import { openTarget, type Target } from './target.js';

describe('handshake and server commands', () => {
  let t: Target;
  beforeAll(async () => {
    t = await openTarget();
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers hello as a writable replica-set primary whose hosts match the URI', async () => {
    const hello = await t.client.db('admin').command({ hello: 1 });
    expect(hello.isWritablePrimary).toBe(true);
    expect(typeof hello.setName).toBe('string');
    expect(hello.logicalSessionTimeoutMinutes).toBeGreaterThan(0);
    expect(hello.hosts).toContain(hello.me);
  });

  it('pings and reports buildInfo and serverStatus', async () => {
    const admin = t.client.db('admin');
    expect((await admin.command({ ping: 1 })).ok).toBe(1);
    const info = await admin.command({ buildInfo: 1 });
    expect(info.version).toMatch(/^\d+\.\d+/);
    expect(Array.isArray(info.versionArray)).toBe(true);
    const status = await admin.command({ serverStatus: 1 });
    expect(status.ok).toBe(1);
    expect(typeof status.uptime).toBe('number');
    expect(status.opcounters).toBeDefined();
  });

  it('rejects an unknown command with CommandNotFound naming it', async () => {
    const err = await t.db.command({ frobnicate: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoServerError);
    expect((err as MongoServerError).code).toBe(59);
    expect((err as MongoServerError).codeName).toBe('CommandNotFound');
    expect((err as MongoServerError).message).toContain("'frobnicate'");
  });

  it('rejects an unknown field of a known command, naming it', async () => {
    await t.db.collection('c').insertOne({ a: 1 });
    const err = (await t.db.command({ find: 'c', filter: {}, frobnicate: true }).catch((e: unknown) => e)) as MongoServerError;
    expect(err).toBeInstanceOf(MongoServerError);
    expect(err.message).toContain('frobnicate');
  });

  it('serves a client that declares a Stable API version (hello over OP_MSG)', async () => {
    const client = new MongoClient(t.uri, { serverApi: { version: '1' } });
    try {
      const c = client.db(t.db.databaseName).collection('api');
      await c.insertOne({ v: 1 });
      expect(await c.countDocuments()).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('ends sessions, aborting what a closing client left open in a transaction', async () => {
    const client = new MongoClient(t.uri);
    const s = client.startSession();
    s.startTransaction();
    await client
      .db(t.db.databaseName)
      .collection('left')
      .insertOne({ _id: 'held', never: true } as never, { session: s });
    await client.close();
    expect(await t.db.collection('left').countDocuments()).toBe(0);
    // The transaction no longer holds the _id: a plain insert of it goes through at once.
    await t.db.collection('left').insertOne({ _id: 'held' } as never);
    expect(await t.db.collection('left').countDocuments()).toBe(1);
    const ended = await t.client.db('admin').command({ endSessions: [] });
    expect(ended.ok).toBe(1);
  });

  it('lists, creates and drops collections and databases', async () => {
    await t.db.createCollection('made');
    const names = (await t.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    expect(names).toContain('made');
    const dup = (await t.db.createCollection('made').catch((e: unknown) => e)) as MongoServerError;
    expect(dup.code).toBe(48);
    const dbs = await t.client.db('admin').admin().listDatabases();
    expect(dbs.databases.map((d) => d.name)).toContain(t.db.databaseName);
    expect(await t.db.collection('made').drop()).toBe(true);
    // Since MongoDB 7.0 dropping a collection that does not exist succeeds.
    expect(await t.db.collection('never-made').drop()).toBe(true);
    expect(await t.db.collection('made').countDocuments()).toBe(0);
  });

  it('filters listCollections and drops a whole database', async () => {
    const other = t.client.db(`${t.db.databaseName}_other`);
    await other.collection('a').insertOne({ x: 1 });
    await other.collection('b').insertOne({ x: 1 });
    const listed = await other.listCollections({ name: 'b' }).toArray();
    expect(listed.map((c) => [c.name, c.type])).toEqual([['b', 'collection']]);
    expect(await other.dropDatabase()).toBe(true);
    expect(await other.listCollections().toArray()).toEqual([]);
    const dbs = await t.client.db('admin').admin().listDatabases();
    expect(dbs.databases.map((d) => d.name)).not.toContain(other.databaseName);
  });
});

// The emulator itself, started here: these run with or without MONGODB_URI.
describe.each([[true], [false]])('emulator lifecycle (replicaSet=%s)', (replicaSet) => {
  it('serves a driver through its uri, counts commands and stops', async () => {
    const emu = await MongoEmulator.start({ port: 0, replicaSet });
    expect(emu.uri.includes('replicaSet=')).toBe(replicaSet);
    const client = new MongoClient(emu.uri);
    await client.db('x').collection('y').insertOne({ a: 1 });
    expect(
      await client
        .db('x')
        .collection('y')
        .findOne({ a: 1 }, { projection: { _id: 0 } }),
    ).toEqual({ a: 1 });
    const counts = emu.commandCounts();
    expect(counts.insert).toBe(1);
    expect(counts.find).toBe(1);
    await client.close();
    await emu.stop();
  });
});

it("a replica-set emulator's URI names the host and set its hello reports (the emulator itself)", async () => {
  const emu = await MongoEmulator.start({ port: 0, replicaSet: true });
  const client = new MongoClient(emu.uri);
  try {
    const hello = await client.db('admin').command({ hello: 1 });
    expect(emu.uri).toBe(`mongodb://${hello.me}/?replicaSet=${hello.setName}`);
  } finally {
    await client.close();
    await emu.stop();
  }
});
