import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NewJob } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { runLoom, type LoomIo } from '../src/index.js';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';

// `loom jobs cancel|retry|rm|run-now` over several ids or a filter, with --dry-run, --yes and the
// terminal's confirmation, and `loom jobs clean` (issue 34 item 5), in-process against a test MongoDB.

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(async () => {
  await mongo?.stop();
});

const SLOW = 120_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function loom(args: string[], env: Record<string, string>, extra: Partial<LoomIo> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runLoom(args, { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), ...extra });
  return { code, stdout, stderr };
}

const now = () => new Date();
const job = (overrides: Partial<NewJob> = {}): NewJob => ({
  name: 'send-receipt',
  queue: 'emails',
  payload: {},
  priority: 0,
  runAt: now(),
  maxAttempts: 3,
  ...overrides,
});

async function seeded(): Promise<{ store: MongoStore; env: Record<string, string> }> {
  const database = mongo.newDatabaseName('cli-bulk');
  const store = new MongoStore({ client: mongo.client, database, logger: { debug() {}, warn() {}, error() {} }, retention: { completed: false } });
  await store.init();
  return { store, env: { MONGODB_URI: mongo.uri, LOOM_DATABASE: database } };
}

async function enqueue(store: MongoStore, count: number, overrides: Partial<NewJob> = {}): Promise<string[]> {
  const results = await store.enqueue(
    Array.from({ length: count }, () => job(overrides)),
    { now: now() },
  );
  return results.map((r) => r.id);
}

async function statuses(store: MongoStore, ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await store.getJob(id))?.status ?? 'gone'));
}

describe('loom: bulk job actions', () => {
  it(
    'checks bulk command lines before connecting: ids or a filter, a confirmation where nobody can be asked',
    async () => {
      const env = { MONGODB_URI: 'mongodb://127.0.0.1:1', LOOM_DATABASE: 'none' };
      const id = 'abcdefabcdefabcdefabcdef';
      const usage = async (args: string[], message: string) => {
        const run = await loom(args, env);
        expect(run).toMatchObject({ code: 2 });
        expect(run.stderr).toContain(message);
      };
      await usage(['jobs', 'cancel'], 'needs a job id (or several), or filter options');
      await usage(['jobs', 'cancel', id, '--queue', 'emails'], 'not both');
      await usage(['jobs', 'retry', id, 'nope'], "'nope' is not a job id");
      await usage(['jobs', 'run-now', '--queue', 'emails'], 'add --yes to confirm, or --dry-run');
      await usage(['jobs', 'rm', '--status', 'completed', '--json'], 'add --yes');
      await usage(['jobs', 'clean', '--dry-run'], 'needs --older-than');
      await usage(['jobs', 'clean', '--older-than', 'last week', '--dry-run'], 'neither an age');
      await usage(['jobs', 'clean', '--older-than', '7d', '--status', 'queued', '--dry-run'], "--status 'queued' is not completed");
      await usage(['jobs', 'ls', '--dry-run'], 'does not take --dry-run');
    },
    SLOW,
  );

  it(
    'cancels several jobs by id; unknown or unchangeable ids are reported and exit 1',
    async () => {
      const { store, env } = await seeded();
      const ids = await enqueue(store, 3);
      await store.cancelJob(ids[2]!, { now: now() });
      const unknown = 'abcdefabcdefabcdefabcdef';
      const run = await loom(['jobs', 'cancel', ids[0]!, ids[1]!, ids[2]!, unknown, '--reason', 'bulk'], env);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain('cancelled 2 jobs of 3 matched (of 4 ids given)');
      expect(run.stdout).toContain(`skipped 1 job: cancelled: cancel applies to queued, running, waiting (${ids[2]})`);
      expect(run.stdout).toContain(`skipped 1 job: no job has this id (${unknown})`);
      expect(run.stderr).toContain('2 of the jobs given could not be cancelled');
      expect(await statuses(store, ids)).toEqual(['cancelled', 'cancelled', 'cancelled']);
      expect(await store.getJob(ids[0]!)).toMatchObject({ cancelReason: 'bulk' });
    },
    SLOW,
  );

  it(
    'with a filter and --dry-run prints what would change and changes nothing; --yes then does it; --json for scripts',
    async () => {
      const { store, env } = await seeded();
      const emails = await enqueue(store, 4);
      const reports = await enqueue(store, 2, { queue: 'reports', name: 'report' });
      const preview = await loom(['jobs', 'cancel', '--queue', 'emails', '--dry-run'], env);
      expect(preview.code).toBe(0);
      expect(preview.stdout).toContain('would cancel 4 jobs of 4 matched (matching the filter)\ndry run: nothing was changed');
      expect(preview.stdout).toMatch(/^ID\s+NAME\s+QUEUE\s+STATUS\s+CREATED$/m);
      expect(preview.stdout.match(/send-receipt\s+emails\s+queued/g)).toHaveLength(4);
      expect(await statuses(store, emails)).toEqual(['queued', 'queued', 'queued', 'queued']);
      const done = await loom(['jobs', 'cancel', '--queue', 'emails', '--yes', '--json'], env);
      expect(done.code).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ action: 'cancel', dryRun: false, matched: 4, changed: 4, skipped: 0 });
      expect(await statuses(store, emails)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
      expect(await statuses(store, reports)).toEqual(['queued', 'queued']);
      // The retry and removal of what was cancelled, by filter.
      expect(JSON.parse((await loom(['jobs', 'retry', '--queue', 'emails', '--status', 'cancelled', '--yes', '--json'], env)).stdout)).toMatchObject({
        changed: 4,
      });
      expect(await statuses(store, emails)).toEqual(['queued', 'queued', 'queued', 'queued']);
      await loom(['jobs', 'cancel', ...emails.slice(0, 2)], env);
      expect(JSON.parse((await loom(['jobs', 'remove', '--queue', 'emails', '--yes', '--json'], env)).stdout)).toMatchObject({ matched: 2, changed: 2 });
      expect(await statuses(store, emails)).toEqual(['gone', 'gone', 'queued', 'queued']);
    },
    SLOW,
  );

  it(
    'asks on a terminal after showing the dry run: no changes nothing (exit 1), yes goes ahead',
    async () => {
      const { store, env } = await seeded();
      const later = await enqueue(store, 2, { runAt: new Date(Date.now() + 3_600_000) });
      const questions: string[] = [];
      const no = await loom(['jobs', 'run-now', '--name', 'send-receipt'], env, { confirm: async (q) => (questions.push(q), false) });
      expect(no.code).toBe(1);
      expect(no.stdout).toContain('would make due now 2 jobs of 2 matched');
      expect(questions).toEqual(['Made due now these 2 jobs? [y/N] ']);
      expect((await store.getJob(later[0]!))!.runAt.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
      const yes = await loom(['jobs', 'run-now', '--name', 'send-receipt'], env, { confirm: async () => true });
      expect(yes.code).toBe(0);
      expect(yes.stdout).toContain('made due now 2 jobs of 2 matched');
      expect((await store.getJob(later[0]!))!.runAt.getTime()).toBeLessThanOrEqual(Date.now());
      // One id, as before: its own message and exit code.
      expect(await loom(['jobs', 'run-now', later[0]!], env)).toMatchObject({
        code: 1,
        stderr: expect.stringContaining('only a queued job that is to run later'),
      });
      const [delayed] = await enqueue(store, 1, { runAt: new Date(Date.now() + 60_000) });
      expect(await loom(['jobs', 'run-now', delayed!], env)).toMatchObject({ code: 0, stdout: `job ${delayed} runs now\n` });
    },
    SLOW,
  );

  it(
    'cleans completed jobs finished before a cut-off, with a dry run first',
    async () => {
      const { store, env } = await seeded();
      const finish = async (at: Date): Promise<string> => {
        const [{ id }] = await store.enqueue([job({ name: 'old', runAt: at })], { now: at });
        const [claimed] = await store.claim({ owner: 't', queues: ['emails'], names: ['old'], limit: 1, leaseUntil: new Date(at.getTime() + 60_000), now: at });
        await store.complete({ jobId: id, token: claimed!.lease!.token }, { now: at });
        return id;
      };
      const old = [await finish(new Date(Date.now() - 9 * 86_400_000)), await finish(new Date(Date.now() - 8 * 86_400_000))];
      const recent = await finish(new Date(Date.now() - 3_600_000));
      const preview = await loom(['jobs', 'clean', '--older-than', '7d', '--dry-run'], env);
      expect(preview.code).toBe(0);
      expect(preview.stdout).toContain('would remove 2 jobs of 2 matched (completed, finished before');
      expect(await statuses(store, [...old, recent])).toEqual(['completed', 'completed', 'completed']);
      const done = await loom(['jobs', 'clean', '--older-than', '7d', '--yes', '--json'], env);
      expect(JSON.parse(done.stdout)).toMatchObject({ action: 'remove', matched: 2, changed: 2 });
      expect(await statuses(store, [...old, recent])).toEqual(['gone', 'gone', 'completed']);
    },
    SLOW,
  );
});
