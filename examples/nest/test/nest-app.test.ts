import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { MongoStore } from '@loom/mongo-store';
import { LOOM_MODULE_OPTIONS, type LoomModuleOptions } from '@loom/nestjs';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { startTestMongo } from '@loom/testing/mongo';
import { AppModule } from '../src/app.module.js';
import { MongoConnection } from '../src/mongo.module.js';

/** A JSON answer of the example's API as the tests read it: each route fills some of these fields. */
interface NestAnswer {
  id: string;
  status: string;
  message: string;
  [field: string]: unknown;
}

describe('examples/nest over HTTP, on a FakeClock', () => {
  let app: INestApplication;
  let t: TestLoom;
  let url: string;

  const request = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as NestAnswer };
  };

  beforeAll(async () => {
    const mongo = await startTestMongo();
    const clock = new FakeClock();
    // The app's own modules, with the test's MongoDB and the engine driven by the test.
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(MongoConnection)
      .useValue(new MongoConnection(mongo))
      .overrideProvider(LOOM_MODULE_OPTIONS)
      .useValue({
        // No TTL deletes: the server's wall clock is months past the FakeClock's.
        store: new MongoStore({ client: mongo.client, database: mongo.newDatabaseName('nest'), retention: { completed: false, dead: false } }),
        clock,
        createLoom: async (options) => (t = await createTestLoom({ ...options, jobs: options.jobs ?? [], clock, start: false })).loom,
      } satisfies LoomModuleOptions)
      .compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0);
    url = (await app.getUrl()).replace('[::1]', 'localhost');
  });

  afterAll(async () => {
    await t?.stop();
    await app?.close();
  });

  it('POST /signups enqueues the welcome mail, the job sends it, and the same email again is deduplicated', async () => {
    const first = await request('POST', '/signups', { email: 'ada@example.com' });
    expect(first).toEqual({ status: 202, body: { id: expect.any(String), deduplicated: false } });
    await t.runUntilIdle();
    expect((await request('GET', `/jobs/${first.body.id}`)).body).toMatchObject({ status: 'completed', attempt: 1, name: 'send-welcome' });
    expect((await request('GET', '/mail')).body).toEqual([{ to: 'ada@example.com', subject: 'Welcome aboard!' }]);
    const again = await request('POST', '/signups', { email: 'ada@example.com' });
    expect(again).toEqual({ status: 202, body: { id: first.body.id, deduplicated: true } });
  });

  it('refuses an invalid email with 400 naming the field, and stores nothing', async () => {
    const before = await t.loom.stats();
    const res = await request('POST', '/signups', { email: 'not-an-email' });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/Invalid payload for job "send-welcome" at email/);
    expect(await t.loom.stats()).toEqual(before);
  });

  it('a mail refused on every attempt ends in GET /dead-letters; POST /dead-letters/:id/retry sends it', async () => {
    const { body } = await request('POST', '/signups', { email: 'bob@flaky.example' });
    await t.runUntilIdle();
    await t.advance('2s'); // two retries, 1 s apart
    const dead = await request('GET', '/dead-letters');
    expect(dead.body).toEqual([
      expect.objectContaining({ id: body.id, name: 'send-welcome', attempts: 3, reason: expect.stringMatching(/refused bob@flaky.example \(try 3\)/) }),
    ]);
    expect(await request('POST', `/dead-letters/${body.id}/retry`)).toEqual({ status: 202, body: { jobId: body.id } });
    await t.runUntilIdle();
    expect((await request('GET', `/jobs/${body.id}`)).body.status).toBe('completed');
    expect((await request('GET', '/mail')).body).toContainEqual({ to: 'bob@flaky.example', subject: 'Welcome aboard!' });
    expect((await request('GET', '/dead-letters')).body).toEqual([]);
    expect((await request('POST', `/dead-letters/${body.id}/retry`)).status).toBe(404);
  });
});

describe('examples/nest as a process (what `npm run nest` starts)', () => {
  it('serves, runs the job it enqueues, and on SIGTERM stops the engine and closes MongoDB before exiting', async () => {
    const main = join(dirname(fileURLToPath(import.meta.url)), '../dist/main.js');
    const { MONGODB_URI: _uri, ...env } = process.env; // its in-process MongoDB: nothing left behind
    const child = spawn(process.execPath, [main], { env: { ...env, PORT: '0', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const waiters: Array<{ pattern: RegExp; resolve: (m: RegExpMatchArray) => void }> = [];
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      for (const w of [...waiters]) {
        const match = output.match(w.pattern);
        if (match) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(match);
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const exited = once(child, 'exit');
    const line = (pattern: RegExp) => {
      const match = output.match(pattern);
      return match ? Promise.resolve(match) : new Promise<RegExpMatchArray>((resolve) => waiters.push({ pattern, resolve }));
    };
    try {
      const [, url] = await line(/Nest app on (http:\/\/\S+)\./);
      const res = await fetch(`${url}/signups`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ada@example.com' }),
      });
      const { id } = (await res.json()) as { id: string };
      await line(new RegExp(`send-welcome ${id} completed on attempt 1`));
      child.kill('SIGTERM');
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' }); // Nest re-raises the signal after closing
      expect(output).toMatch(/MongoDB closed/);
      expect(output).not.toMatch(/ERROR/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
