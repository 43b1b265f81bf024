import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoStore } from '@loom/mongo-store';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import type { Db } from 'mongodb';
import { runLoom } from '../src/index.js';
import { checkRoundTrip, DISTANT_SERVER_MS } from '../src/doctor/checks.js';

// `loom doctor` in-process (runLoom, the code the binary runs) against the emulator as a replica
// set and as a standalone. The checks use real timers (a change event's arrival, the clock's round
// trip); the tests only assert on the outcome: exit code, statuses, messages.
let replicaSet: TestMongo;
let standalone: TestMongo;
beforeAll(async () => {
  replicaSet = await startTestMongo();
  standalone = await startTestMongo({ topology: 'standalone' });
});
afterAll(async () => {
  await replicaSet?.stop();
  await standalone?.stop();
});

const CHECKS = ['topology', 'server version', 'transactions', 'change streams', "w: 'majority'", 'indexes', 'clock', 'round trip', 'sharding'];

interface Check {
  name: string;
  status: 'pass' | 'warn' | 'fail';
  message: string;
  detail?: Record<string, unknown>;
}

async function doctor(args: string[], env: Record<string, string | undefined> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runLoom(['doctor', ...args], { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

async function doctorJson(args: string[], env: Record<string, string | undefined> = {}) {
  const run = await doctor([...args, '--json'], env);
  return { code: run.code, checks: (JSON.parse(run.stdout) as { checks: Check[] }).checks, stderr: run.stderr };
}

const statuses = (checks: Check[]) => Object.fromEntries(checks.map((c) => [c.name, c.status]));

/** A database with a Loom store, initialised as an engine would. */
async function storeIn(mongo: TestMongo): Promise<string> {
  const database = mongo.newDatabaseName('doctor');
  await new MongoStore({ client: mongo.client, database, logger: { debug() {}, warn() {}, error() {} }, retention: { completed: false } }).init();
  return database;
}

describe('loom doctor', () => {
  it('passes every check on a replica set with a Loom store, exit 0, and drops its probe collection', async () => {
    const database = await storeIn(replicaSet);
    const run = await doctorJson(['--database', database], { MONGODB_URI: replicaSet.uri });
    expect(run.code).toBe(0);
    expect(run.checks.map((c) => c.name)).toEqual(CHECKS);
    expect(statuses(run.checks)).toEqual(Object.fromEntries(CHECKS.map((name) => [name, 'pass'])));
    for (const check of run.checks) {
      expect(Object.keys(check).every((k) => ['name', 'status', 'message', 'detail'].includes(k))).toBe(true);
      expect(check.message).not.toBe('');
    }
    expect(run.checks.find((c) => c.name === 'topology')!.message).toMatch(/^replica set /);
    expect(run.checks.find((c) => c.name === 'indexes')!.detail).toMatchObject({ missing: [], differing: [] });
    const collections = await replicaSet.client.db(database).listCollections({ name: 'loom_doctor_probe' }).toArray();
    expect(collections).toEqual([]);

    const text = await doctor(['--uri', replicaSet.uri, '--database', database]);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toBe(`loom doctor: ${replicaSet.uri}, database '${database}'`);
    expect(lines.slice(1, -1).map((l) => l.slice(0, 4))).toEqual(CHECKS.map(() => 'PASS'));
    expect(lines.at(-1)).toBe('9 passed, 0 warned, 0 failed');
  }, 60_000);

  it('warns on a standalone (no transactions, no change streams) and still exits 0', async () => {
    const database = await storeIn(standalone);
    const run = await doctorJson(['--uri', standalone.uri, '--database', database]);
    expect(statuses(run.checks)).toMatchObject({ topology: 'warn', transactions: 'warn', 'change streams': 'warn', indexes: 'pass', clock: 'pass' });
    expect(run.checks.find((c) => c.name === 'transactions')!.message).toContain('ctx.transaction and enqueue with { session } fail');
    expect(run.checks.find((c) => c.name === 'change streams')!.message).toContain('poll');
    expect(run.checks.some((c) => c.status === 'fail')).toBe(false);
    expect(run.code).toBe(0);
  }, 60_000);

  it("fails naming an index that differs from Loom's and one that is missing, exit 1", async () => {
    const database = await storeIn(replicaSet);
    const db = replicaSet.client.db(database);
    await db.collection('loom_jobs').dropIndex('loom_list_queue');
    await db.collection('loom_jobs').createIndex({ queue: 1 }, { name: 'loom_list_queue' });
    await db.collection('loom_dead_letters').dropIndex('loom_dead_died');
    const run = await doctorJson(['--uri', replicaSet.uri, '--database', database]);
    expect(run.code).toBe(1);
    const indexes = run.checks.find((c) => c.name === 'indexes')!;
    expect(indexes.status).toBe('fail');
    expect(indexes.message).toContain('index "loom_list_queue" on collection "loom_jobs"');
    expect(indexes.detail).toMatchObject({ missing: ['loom_dead_letters.loom_dead_died'], differing: [expect.stringContaining('loom_list_queue')] });
    // Only the index check fails: the others still ran.
    expect(run.checks.filter((c) => c.status === 'fail').map((c) => c.name)).toEqual(['indexes']);
  }, 60_000);

  it('warns when the database holds no Loom store, or none is named', async () => {
    const empty = await doctorJson(['--uri', replicaSet.uri, '--database', replicaSet.newDatabaseName('doctor_empty')]);
    expect(empty.code).toBe(0);
    expect(empty.checks.find((c) => c.name === 'indexes')).toMatchObject({ status: 'warn', message: expect.stringContaining("no collection 'loom_jobs'") });
    const unnamed = await doctorJson(['--uri', replicaSet.uri]);
    expect(unnamed.code).toBe(0);
    expect(statuses(unnamed.checks)).toMatchObject({ indexes: 'warn', sharding: 'warn', transactions: 'pass' });
  }, 60_000);

  it('fails at once with the cause when the server refuses the connection, exit 1', async () => {
    const started = Date.now();
    const run = await doctorJson(['--uri', 'mongodb://ops:s3cret@127.0.0.1:1/app?directConnection=true']);
    // A bound against a hang (the connect timeout is 3.5 s), not a wait.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(run.code).toBe(1);
    expect(run.checks).toEqual([{ name: 'connection', status: 'fail', message: expect.stringContaining('ECONNREFUSED') }]);
    expect(run.checks[0]!.message).toContain('mongodb://ops:***@127.0.0.1:1/app');
    expect(run.checks[0]!.message).not.toContain('s3cret');
  }, 60_000);

  it('refuses bad command lines with exit 2, connecting to nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['doctor'], /pass --uri or set MONGODB_URI/],
      [['doctor', '--uri', 'http://x'], /not a MongoDB connection string/],
      [['doctor', '--uri', 'mongodb://127.0.0.1:1', '--force'], /'doctor' does not take --force/],
      [['doctor', '--uri', 'mongodb://127.0.0.1:1', 'extra'], /'doctor' takes no argument/],
      [['selftest', '--uri', 'mongodb://127.0.0.1:1'], /'selftest' needs --database/],
      [['selftest', '--uri', 'mongodb://127.0.0.1:1', '--database', 'x', '--duration', 'soon'], /--duration must be a duration/],
      [['--uri', 'mongodb://127.0.0.1:1', 'selftest', '--database', 'x', '--colour'], /Unknown option '--colour'/],
    ];
    for (const [args, message] of cases) {
      let stderr = '';
      const code = await runLoom(args, { env: {}, stdout: () => {}, stderr: (t) => (stderr += t) });
      expect({ args, code, stderr }).toEqual({ args, code: 2, stderr: expect.stringMatching(message) });
    }
  });
});

describe("loom doctor's round trip", () => {
  /** A database whose every `ping` takes the next of `delays` (ms) on the check's own clock. */
  function pinging(delays: number[]): { db: Db; now: () => number } {
    let clock = 0;
    const answers = [...delays];
    const ping = () => {
      clock += answers.shift() ?? 0;
      return Promise.resolve({ ok: 1 });
    };
    const db = { admin: () => ({ command: ping }) };
    return { db: db as unknown as Db, now: () => clock };
  }

  it('passes with the median of five pings after a warm-up, and says what it bounds', async () => {
    // The first ping warms the connection and is not counted; one slow ping does not move the median.
    const { db, now } = pinging([500, 1.2, 0.9, 250, 1.1, 1.3]);
    const result = await checkRoundTrip(db, now);
    expect(result).toMatchObject({ name: 'round trip', status: 'pass', detail: { medianMs: 1.2, maxMs: 250, warnAboveMs: DISTANT_SERVER_MS } });
    expect(result.message).toBe('a command takes 1.2 ms there and back (median of 5 pings); a job starts about 3 of them after its enqueue');
  });

  it('warns when the server is far from this host, saying where to run engines', async () => {
    const { db, now } = pinging([80, 74, 71, 90, 73, 75]);
    const result = await checkRoundTrip(db, now);
    expect(result).toMatchObject({ status: 'warn', detail: { medianMs: 74 } });
    expect(result.message).toContain('a command takes 74 ms there and back');
    expect(result.message).toContain('run engines near the primary');
  });
});
