import { afterEach, describe, expect, it } from '@jest/globals';
import { MongoEmulator } from '@loom/mongo-emulator';
import { SHARED_TEST_MONGO_ENV, startSharedTestMongo, startTestMongo, type TestMongo } from '@loom/testing/mongo';

// startTestMongo picks MONGODB_URI, else a cached mongod for mongodb-memory-server, else the
// emulator. Each test below sets the environment it describes (MONGODB_URI set to a server of a
// given topology, or unset with mongodb-memory-server skipped), so every expectation holds on any
// machine, with or without a MONGODB_URI of its own.

const savedUri = process.env.MONGODB_URI;
/** This run's shared servers (jest's global setup), set aside by the tests of startSharedTestMongo. */
const savedShared = process.env[SHARED_TEST_MONGO_ENV];
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  if (savedUri === undefined) delete process.env.MONGODB_URI;
  else process.env.MONGODB_URI = savedUri;
  if (savedShared === undefined) delete process.env[SHARED_TEST_MONGO_ENV];
  else process.env[SHARED_TEST_MONGO_ENV] = savedShared;
});

function track(mongo: TestMongo): TestMongo {
  cleanups.push(() => mongo.stop());
  return mongo;
}

/** An emulator of the given topology, as a MONGODB_URI would point at. */
async function serverAt(replicaSet: boolean): Promise<MongoEmulator> {
  const emulator = await MongoEmulator.start({ port: 0, replicaSet });
  cleanups.push(() => emulator.stop());
  return emulator;
}

describe('startTestMongo without MONGODB_URI (mongodb-memory-server skipped)', () => {
  it('uses the emulator, a replica set by default, and its one line says why no mongod was used', async () => {
    delete process.env.MONGODB_URI;
    const lines: string[] = [];
    const mongo = track(await startTestMongo({ memoryServer: false, log: (line) => lines.push(line) }));
    expect(mongo).toMatchObject({
      kind: 'emulator',
      replicaSet: true,
      notUsed: ['MONGODB_URI not set', 'mongodb-memory-server skipped (memoryServer: false)'],
    });
    expect(lines).toEqual([
      `[loom/testing] MongoDB for tests: emulator, replica set, ${mongo.uri} (MONGODB_URI not set; mongodb-memory-server skipped (memoryServer: false))`,
    ]);
    expect(await mongo.client.db('admin').command({ ping: 1 })).toMatchObject({ ok: 1 });
  });

  it('gives a standalone on request, and each caller its own database name', async () => {
    delete process.env.MONGODB_URI;
    const mongo = track(await startTestMongo({ memoryServer: false, log: () => {}, topology: 'standalone' }));
    expect(mongo).toMatchObject({ kind: 'emulator', replicaSet: false });
    const a = mongo.newDatabaseName('users');
    const b = mongo.newDatabaseName('users');
    expect(a).not.toBe(b);
    expect(a.length).toBeLessThan(64);
  });
});

describe('startTestMongo with MONGODB_URI set', () => {
  it('uses a replica-set MONGODB_URI as it is, drops the databases it handed out and leaves the server running', async () => {
    const server = await serverAt(true);
    process.env.MONGODB_URI = server.uri;
    const lines: string[] = [];
    const mongo = await startTestMongo({ log: (line) => lines.push(line) });
    expect(mongo).toMatchObject({ kind: 'uri', uri: server.uri, replicaSet: true, notUsed: [] });
    expect(lines).toEqual([`[loom/testing] MongoDB for tests: uri, replica set, MONGODB_URI (${server.uri})`]);
    const database = mongo.newDatabaseName('users');
    await mongo.client.db(database).collection('x').insertOne({ n: 1 });
    await mongo.stop();
    const check = track(await startTestMongo({ log: () => {} }));
    const { databases } = await check.client.db('admin').admin().listDatabases();
    expect(databases.map((d) => d.name)).not.toContain(database);
  });

  it('refuses a standalone MONGODB_URI when the tests ask for a replica set, saying what to do', async () => {
    const server = await serverAt(false);
    process.env.MONGODB_URI = server.uri;
    const lines: string[] = [];
    const failure = await startTestMongo({ log: (line) => lines.push(line) }).then(
      (wrongTopology) => void track(wrongTopology),
      (err: unknown) => err as Error,
    );
    expect(failure?.message).toMatch(/MONGODB_URI \(mongodb:\/\/127\.0\.0\.1:\d+\/\) is a standalone, and these tests asked for a replica set/);
    expect(failure?.message).toContain('--replSet');
    expect(lines).toEqual([]);
  });

  it('passes over a replica-set MONGODB_URI for a standalone, saying so in its line', async () => {
    const server = await serverAt(true);
    process.env.MONGODB_URI = server.uri;
    const lines: string[] = [];
    const mongo = track(await startTestMongo({ topology: 'standalone', memoryServer: false, log: (line) => lines.push(line) }));
    expect(mongo).toMatchObject({
      kind: 'emulator',
      replicaSet: false,
      notUsed: ['MONGODB_URI is a replica set, a standalone was asked for', 'mongodb-memory-server skipped (memoryServer: false)'],
    });
    expect(lines).toEqual([expect.stringContaining('emulator, standalone')]);
  });
});

describe('startSharedTestMongo: one server for a whole test run', () => {
  it('starts a replica set and a standalone that startTestMongo then uses, each caller in databases of its own', async () => {
    delete process.env.MONGODB_URI;
    delete process.env[SHARED_TEST_MONGO_ENV];
    const shared = await startSharedTestMongo({ memoryServer: false });
    cleanups.push(async () => shared?.stop());
    expect(shared?.kind).toBe('emulator');
    expect(Object.keys(shared?.env ?? {})).toEqual([SHARED_TEST_MONGO_ENV]);

    const lines: string[] = [];
    const a = await startTestMongo({ log: (line) => lines.push(line) });
    const b = track(await startTestMongo({ log: () => {} }));
    expect(a).toMatchObject({ kind: 'emulator', replicaSet: true, notUsed: ['MONGODB_URI not set', 'mongodb-memory-server skipped (memoryServer: false)'] });
    expect(b.uri).toBe(a.uri);
    expect(lines).toEqual([
      `[loom/testing] MongoDB for tests: emulator, replica set, ${a.uri}, shared by this test run (MONGODB_URI not set; mongodb-memory-server skipped (memoryServer: false))`,
    ]);
    const database = a.newDatabaseName('users');
    expect(b.newDatabaseName('users')).not.toBe(database);
    await a.client.db(database).collection('x').insertOne({ n: 1 });
    // stop() drops what it handed out and leaves the shared server to the other files.
    await a.stop();
    const { databases } = await b.client.db('admin').admin().listDatabases();
    expect(databases.map((d) => d.name)).not.toContain(database);

    const standalone = track(await startTestMongo({ topology: 'standalone', log: () => {} }));
    expect(standalone).toMatchObject({ kind: 'emulator', replicaSet: false });
    expect(standalone.uri).not.toBe(a.uri);
    expect(track(await startTestMongo({ topology: 'standalone', log: () => {} })).uri).toBe(standalone.uri);
  });

  it('leaves a server of its own to whoever asks (ownServer, memoryServer: false), and stops with the run', async () => {
    delete process.env.MONGODB_URI;
    delete process.env[SHARED_TEST_MONGO_ENV];
    const shared = await startSharedTestMongo({ memoryServer: false });
    cleanups.unshift(async () => shared?.stop());
    const sharedUri = track(await startTestMongo({ log: () => {} })).uri;
    const own = track(await startTestMongo({ ownServer: true, memoryServer: false, log: () => {} }));
    const skipping = track(await startTestMongo({ memoryServer: false, log: () => {} }));
    expect([own.uri, skipping.uri]).not.toContain(sharedUri);
    expect(own.uri).not.toBe(skipping.uri);
    // The files' connections close, then the run's servers stop (the first cleanup).
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    expect(process.env[SHARED_TEST_MONGO_ENV]).toBeUndefined();
    const after = track(await startTestMongo({ log: () => {} }));
    expect(after.uri).not.toBe(sharedUri);
  });

  it('starts nothing when MONGODB_URI is set: the files use that server', async () => {
    process.env.MONGODB_URI = (await serverAt(true)).uri;
    expect(await startSharedTestMongo()).toBeUndefined();
  });
});
