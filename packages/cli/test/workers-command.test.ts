import 'reflect-metadata';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Job, LOOM_VERSION, type WorkerPresence } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { createTestLoom, FakeClock } from '@loom/testing';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { runLoom } from '../src/index.js';

// Issue 34, item 4: `loom workers ls` lists the engines sharing the store that are alive, from the
// presence rows they write. Engines here run on a FakeClock set to the real time, since the command
// judges expiry by the system clock.

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(async () => {
  await mongo?.stop();
});

@Job({ name: 'cli-presence', queue: 'emails' })
class PresenceJob {
  async run(): Promise<void> {}
}

async function loom(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runLoom(args, { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('loom workers ls', () => {
  it('lists the live engines as a table and as JSON, leaves out the gone, and says when there is none', async () => {
    const database = mongo.newDatabaseName('cli_workers');
    const store = new MongoStore({ client: mongo.client, database, logger: { debug() {}, warn() {}, error() {} }, retention: { completed: false } });
    const env = { MONGODB_URI: mongo.uri, LOOM_DATABASE: database };
    const t = await createTestLoom({ jobs: [PresenceJob], store, clock: new FakeClock(new Date()), owner: 'engine-1', concurrency: 7, presenceInterval: '5s' });
    await t.settle();
    // An engine that died a minute ago without stopping: expired, never listed.
    const gone: WorkerPresence = {
      ...(await store.listPresence(new Date()))[0]!,
      id: 'engine-0',
      lastSeenAt: new Date(Date.now() - 60_000),
      expiresAt: new Date(Date.now() - 45_000),
    };
    await store.recordPresence(gone);

    const listed = await loom(['workers', 'ls'], env);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const [header, ...rows] = listed.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+HOST\s+PID\s+VERSION\s+QUEUES\s+CONCURRENCY\s+RUNNING\s+LAST SEEN$/);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatch(new RegExp(`^engine-1\\s+${hostname()}\\s+${process.pid}\\s+${LOOM_VERSION}\\s+emails\\s+7\\s+0\\s+(just now|\\d+s ago)$`));

    const json = JSON.parse((await loom(['workers', 'ls', '--json'], env)).stdout) as Record<string, unknown>[];
    expect(json).toEqual([
      expect.objectContaining({ id: 'engine-1', node: process.version, queues: ['emails'], concurrency: 7, running: 0, runningJobIds: [], state: 'running' }),
    ]);

    await t.stop();
    expect(await loom(['workers', 'ls'], env)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no live workers/) });
    expect(await loom(['workers', 'ls', 'extra'], env)).toMatchObject({ code: 2, stderr: expect.stringContaining("'workers ls' takes no argument") });
    expect(await loom(['workers'], env)).toMatchObject({ code: 2, stderr: expect.stringContaining("'workers' needs a subcommand") });
    await store.close();
  });
});
