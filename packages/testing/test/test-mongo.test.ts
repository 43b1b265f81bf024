import { afterEach, describe, expect, it } from '@jest/globals';
import { MongoEmulator } from '@loom/mongo-emulator';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';

// startTestMongo picks MONGODB_URI, else a cached mongod for mongodb-memory-server, else the
// emulator. Each test below sets the environment it describes (MONGODB_URI set to a server of a
// given topology, or unset with mongodb-memory-server skipped), so every expectation holds on any
// machine, with or without a MONGODB_URI of its own.

const savedUri = process.env.MONGODB_URI;
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  if (savedUri === undefined) delete process.env.MONGODB_URI;
  else process.env.MONGODB_URI = savedUri;
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
    expect(mongo).toMatchObject({ kind: 'emulator', replicaSet: true, notUsed: ['MONGODB_URI not set', 'mongodb-memory-server skipped (memoryServer: false)'] });
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
    expect(mongo).toMatchObject({ kind: 'emulator', replicaSet: false, notUsed: ['MONGODB_URI is a replica set, a standalone was asked for', 'mongodb-memory-server skipped (memoryServer: false)'] });
    expect(lines).toEqual([expect.stringContaining('emulator, standalone')]);
  });
});
