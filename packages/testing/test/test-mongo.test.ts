import { afterEach, describe, expect, it } from '@jest/globals';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';

// startTestMongo picks MONGODB_URI, else a cached mongod for mongodb-memory-server, else the
// emulator. On a machine with neither (like CI here) it must say so in one line and use the emulator.
let mongo: TestMongo | undefined;
const savedUri = process.env.MONGODB_URI;

afterEach(async () => {
  await mongo?.stop();
  mongo = undefined;
  if (savedUri === undefined) delete process.env.MONGODB_URI;
  else process.env.MONGODB_URI = savedUri;
});

describe('startTestMongo', () => {
  it('prints exactly one line naming its choice, and gives a working client', async () => {
    const lines: string[] = [];
    mongo = await startTestMongo({ log: (line) => lines.push(line) });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(mongo.kind);
    expect(lines[0]).toContain(mongo.replicaSet ? 'replica set' : 'standalone');
    if (savedUri === undefined && mongo.kind === 'emulator') expect(lines[0]).toMatch(/no cached mongod binary|mongodb-memory-server/);
    expect(await mongo.client.db('admin').command({ ping: 1 })).toMatchObject({ ok: 1 });
    if (mongo.kind !== 'uri') expect(mongo.replicaSet).toBe(true); // a MONGODB_URI is taken as it is
  });

  it('gives each caller its own database name, and a standalone on request', async () => {
    mongo = await startTestMongo({ log: () => {}, topology: 'standalone' });
    expect(mongo.replicaSet).toBe(false);
    const a = mongo.newDatabaseName('users');
    const b = mongo.newDatabaseName('users');
    expect(a).not.toBe(b);
    expect(a.length).toBeLessThan(64);
  });

  it('uses MONGODB_URI when it is set', async () => {
    const server = await startTestMongo({ log: () => {} });
    try {
      process.env.MONGODB_URI = server.uri;
      const lines: string[] = [];
      mongo = await startTestMongo({ log: (line) => lines.push(line) });
      expect(mongo.kind).toBe('uri');
      expect(mongo.uri).toBe(server.uri);
      expect(lines).toEqual([expect.stringContaining('MONGODB_URI')]);
      // The databases it handed out are dropped on stop(); the server itself is not ours to stop.
      const database = mongo.newDatabaseName('users');
      await mongo.client.db(database).collection('x').insertOne({ n: 1 });
      await mongo.stop();
      mongo = undefined;
      const { databases } = await server.client.db('admin').admin().listDatabases();
      expect(databases.map((d) => d.name)).not.toContain(database);
      expect(await server.client.db('admin').command({ ping: 1 })).toMatchObject({ ok: 1 });
    } finally {
      await mongo?.stop();
      mongo = undefined;
      await server.stop();
    }
  });
});
