import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoEmulator } from '@loom/mongo-emulator';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { openShopDatabase } from '../src/infra/database.js';
import { startShop } from './shop-harness.js';

// The shop's database choice (the README's dev-mode recipe) and what it promises at stop.
const saved = { MONGODB_URI: process.env.MONGODB_URI, NODE_ENV: process.env.NODE_ENV };
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

describe('openShopDatabase', () => {
  it('without MONGODB_URI, in development, runs the emulator and says why no mongod was used and that nothing is kept', async () => {
    delete process.env.MONGODB_URI;
    process.env.NODE_ENV = 'development';
    const db = await openShopDatabase();
    cleanups.push(() => db.close());
    expect(db).toMatchObject({ kind: 'emulator', keepsData: false });
    expect(db.description).toMatch(/the in-process emulator .* not a mongod, because MONGODB_URI is not set; it keeps nothing after exit/);
    expect(await db.client.db('admin').command({ ping: 1 })).toMatchObject({ ok: 1 });
  });

  it('uses MONGODB_URI when set, naming it without credentials', async () => {
    const server = await MongoEmulator.start({ replicaSet: true });
    cleanups.push(() => server.stop());
    process.env.MONGODB_URI = server.uri;
    const db = await openShopDatabase();
    cleanups.push(() => db.close());
    expect(db).toMatchObject({ kind: 'uri', keepsData: true, description: `MongoDB: MONGODB_URI (${server.uri}); data stays there after exit` });
  });

  it('refuses to start without MONGODB_URI in production', async () => {
    delete process.env.MONGODB_URI;
    process.env.NODE_ENV = 'production';
    await expect(openShopDatabase()).rejects.toThrow(/MONGODB_URI is not set: in production the shop needs a MongoDB replica set/);
  });
});

describe('the stop line', () => {
  let mongo: TestMongo;
  beforeAll(async () => {
    mongo = await startTestMongo();
  });
  afterAll(async () => {
    await mongo.stop();
  });

  it('on a database that keeps nothing, does not promise that unfinished work runs on the next start', async () => {
    const shop = await startShop(mongo, { durable: false });
    await shop.app.stop();
    const messages = shop.logs.entries.map((e) => e.msg);
    expect(messages).toContain(
      'stopped; the in-process emulator keeps nothing, so unfinished jobs end with this process (set MONGODB_URI to a replica set to keep them)',
    );
    expect(messages.some((m) => m.includes('runs on the next start'))).toBe(false);
  });
});
