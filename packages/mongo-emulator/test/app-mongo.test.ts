import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { MongoClient } from 'mongodb';
import { appMongo, MongoUriRequiredError } from '../src/index.js';

const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), '..');

describe('appMongo(): the MongoDB for an app', () => {
  it('takes MONGODB_URI when it is set, says so without the credentials, and starts nothing', async () => {
    const lines: string[] = [];
    for (const NODE_ENV of ['development', 'production']) {
      const mongo = await appMongo({ env: { MONGODB_URI: 'mongodb://app:s3cret@db1,db2/?replicaSet=rs0', NODE_ENV }, log: (l) => lines.push(l) });
      expect(mongo).toMatchObject({ uri: 'mongodb://app:s3cret@db1,db2/?replicaSet=rs0', source: 'MONGODB_URI' });
      await mongo.close();
    }
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe('MongoDB: MONGODB_URI (mongodb://db1,db2/?replicaSet=rs0), because it is set; data stays there after exit');
  });

  it('refuses to start the emulator in production', async () => {
    const lines: string[] = [];
    const attempt = appMongo({ env: { NODE_ENV: 'production' }, log: (l) => lines.push(l) });
    await expect(attempt).rejects.toBeInstanceOf(MongoUriRequiredError);
    await expect(attempt).rejects.toMatchObject({ code: 'MONGODB_URI_REQUIRED', message: expect.stringContaining('Set MONGODB_URI') });
    expect(lines).toEqual([]);
  });

  it('starts the in-process emulator (a replica set) without MONGODB_URI, says why in one line, and close() stops it', async () => {
    const lines: string[] = [];
    const mongo = await appMongo({ env: {}, log: (l) => lines.push(l) });
    expect(mongo.source).toBe('emulator');
    expect(mongo.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/\?replicaSet=rs0$/);
    expect(lines).toEqual([expect.stringMatching(/^MongoDB: the in-process emulator .* because MONGODB_URI is not set .*keeps nothing after exit/)]);
    expect(lines[0]).toBe(mongo.description);
    const client = await new MongoClient(mongo.uri).connect();
    await client.db('app').collection('c').insertOne({ a: 1 });
    expect(await client.db('app').collection('c').countDocuments()).toBe(1);
    await client.close();
    await mongo.close();
    await mongo.close(); // twice is fine
    await expect(new MongoClient(mongo.uri, { serverSelectionTimeoutMS: 200 }).connect()).rejects.toThrow();
  });

  it('does not keep an app that has finished alive: the process exits and the emulator stops with it (built package)', () => {
    const script = `
      import { MongoClient } from 'mongodb';
      import { appMongo } from ${JSON.stringify(pathToFileURL(resolve(PACKAGE, 'dist/index.js')).href)};
      const mongo = await appMongo({ env: {}, log: () => {} });
      const client = await new MongoClient(mongo.uri).connect();
      await client.db('app').collection('c').insertOne({ a: 1 });
      await client.close();
      process.on('exit', () => console.log('exited on its own'));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: PACKAGE, encoding: 'utf8', timeout: 20_000 });
    expect({ status: child.status, signal: child.signal, out: child.stdout.trim(), err: child.stderr }).toEqual({
      status: 0,
      signal: null,
      out: 'exited on its own',
      err: '',
    });
  });
});
