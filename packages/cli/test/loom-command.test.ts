import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { decodeCursor, endedJobReason, waitTokenSignal, type JobStore, type NewJob } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { runLoom } from '../src/index.js';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';

// `loom` command lines against a test MongoDB (the emulator here; MONGODB_URI when set). Most run
// in-process through runLoom, the code the binary runs; at least one of each exit code and output
// stream also goes through the real binary (packages/cli/dist/bin.js, built by `npm run build`) as a
// child process. A node start costs 1-2 s on a busy machine, so the binary runs only where it adds
// something: its argv, exit code, stdout and stderr wiring.
const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(async () => {
  await mongo?.stop();
});

/** A deadline against a hang for tests that start the binary (a node start each, 1-2 s on a busy machine). */
const SPAWNS = 180_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The command line through the built binary, as a user runs it. */
function loomBinary(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The same command line run in-process (same code as the binary, without a node start per case). */
async function loom(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runLoom(args, { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

const now = () => new Date();
const job = (overrides: Partial<NewJob> = {}): NewJob => ({
  name: 'send-receipt',
  queue: 'emails',
  payload: { order: 1 },
  priority: 0,
  runAt: now(),
  maxAttempts: 3,
  ...overrides,
});

/** A store initialised as an engine would, on a fresh database, and the env that points `loom` at it. */
async function seeded(): Promise<{ store: MongoStore; env: Record<string, string>; database: string }> {
  const database = mongo.newDatabaseName('cli');
  const store = new MongoStore({ client: mongo.client, database, logger: { debug() {}, warn() {}, error() {} }, retention: { completed: false } });
  await store.init();
  return { store, database, env: { MONGODB_URI: mongo.uri, LOOM_DATABASE: database } };
}

async function claimOne(store: JobStore, name = 'send-receipt', queue = 'emails') {
  const [claimed] = await store.claim({
    owner: 'test-worker',
    queues: [queue],
    names: [name],
    limit: 1,
    leaseUntil: new Date(Date.now() + 60_000),
    now: now(),
  });
  return { id: claimed!.id, lease: { jobId: claimed!.id, token: claimed!.lease!.token } };
}

/** Everything the store holds that a command could change. */
async function snapshot(store: MongoStore) {
  const page = await store.listJobPage({ statuses: ['queued', 'running', 'waiting', 'completed', 'dead', 'cancelled'], limit: 500 });
  return { jobs: page.map((j) => [j.id, j.status, j.updatedAt.getTime()]), paused: await store.pausedQueues(), schedules: await store.listSchedules() };
}

describe('loom: usage', () => {
  it(
    'prints its usage for --help and exits 0',
    async () => {
      const run = await loomBinary(['--help']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('loom jobs ls [--status S[,S...]]');
      expect(run.stdout).toContain('loom dlq purge [--name N] [--queue Q] --yes');
    },
    SPAWNS,
  );

  it(
    'refuses bad command lines with exit 2 and one line, changing nothing',
    async () => {
      const { store, env } = await seeded();
      await store.enqueue([job()], { now: now() });
      const { id } = await claimOne(store);
      await store.deadLetter({ jobId: id, token: (await store.getJob(id))!.lease!.token }, { reason: 'boom', now: now() });
      await store.enqueue([job()], { now: now() });
      const before = await snapshot(store);
      const cases: [string[], RegExp][] = [
        [[], /no command given/],
        [['frobnicate'], /unknown command 'frobnicate'/],
        [['jobs'], /'jobs' needs a subcommand/],
        [['jobs', 'ls', '--colour'], /Unknown option '--colour'/],
        [['jobs', 'cancel'], /'jobs cancel' needs a job id/],
        [['jobs', 'cancel', 'not-an-id'], /'not-an-id' is not a job id/],
        [['jobs', 'show', id, 'extra'], /at most one argument/],
        [['jobs', 'rm', id, 'extra'], /'extra' is not a job id/],
        [['jobs', 'ls', '--limit', '0'], /--limit must be an integer from 1 to 500/],
        [['jobs', 'ls', '--status', 'done'], /--status 'done' is not a status/],
        [['jobs', 'ls', '--cursor', 'abc!'], /not a cursor/],
        [['jobs', 'ls', '--reason', 'x'], /'jobs ls' does not take --reason/],
        [['dlq', 'purge'], /add --yes to confirm/],
        [['dlq', 'retry'], /needs a job id or --all/],
        [['dlq', 'retry', id, '--all'], /not both/],
        [['queues', 'pause'], /'queues pause' needs a queue/],
        [['stats', '--uri', 'http://example.com'], /not a MongoDB connection string/],
      ];
      // Every case in-process, and a few through the binary as well.
      const throughBinary = new Set([0, 5, 11]);
      for (const [i, [args, message]] of cases.entries()) {
        const run = await (throughBinary.has(i) ? loomBinary : loom)(args, env);
        expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 2, stderr: expect.stringMatching(message) });
        expect(run.stderr.trim().split('\n')).toHaveLength(1);
        expect(run.stdout).toBe('');
      }
      expect(await loom(['stats'], { LOOM_DATABASE: 'x' })).toMatchObject({ code: 2, stderr: expect.stringContaining('pass --uri or set MONGODB_URI') });
      expect(await snapshot(store)).toEqual(before);
    },
    SPAWNS,
  );

  it(
    'says in one line, exit 2, when the database cannot be reached, naming the URI without its password',
    async () => {
      const run = await loomBinary(['stats'], { MONGODB_URI: 'mongodb://ops:s3cret@127.0.0.1:1/app?directConnection=true' });
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain('cannot reach MongoDB at mongodb://ops:***@127.0.0.1:1/app?directConnection=true within 3.5 s');
      expect(run.stderr).not.toContain('s3cret');
    },
    SPAWNS,
  );

  it(
    'refuses a database without a Loom store (exit 1), and finds one under another prefix',
    async () => {
      const { env } = await seeded();
      expect(await loomBinary(['stats'], { ...env, LOOM_DATABASE: 'no_such_db_here' })).toMatchObject({
        code: 1,
        stderr: expect.stringContaining("no Loom store in database 'no_such_db_here'"),
      });
      const database = mongo.newDatabaseName('cli_prefix');
      await new MongoStore({ client: mongo.client, database, collectionPrefix: 'acme_', logger: { debug() {}, warn() {}, error() {} } }).init();
      expect(await loom(['stats', '--database', database], env)).toMatchObject({ code: 1 });
      expect(await loom(['stats', '--database', database, '--prefix', 'acme_'], env)).toMatchObject({ code: 0 });
    },
    SPAWNS,
  );
});

describe('loom: jobs', () => {
  it(
    "lists jobs as a table and as JSON, a page at a time, with the next page's command",
    async () => {
      const { store, env } = await seeded();
      for (let i = 0; i < 3; i++) await store.enqueue([job({ payload: { order: i } })], { now: new Date(Date.now() - (3 - i) * 60_000) });
      await store.enqueue([job({ name: 'nightly-report', queue: 'reports' })], { now: now() });
      const table = await loomBinary(['jobs', 'ls', '--name', 'send-receipt', '--limit', '2'], env);
      expect(table.code).toBe(0);
      const lines = table.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^ID\s+NAME\s+QUEUE\s+STATUS\s+ATTEMPT\s+CREATED\s+UPDATED\s+REASON$/);
      expect(lines.slice(1, 3).every((l) => /send-receipt\s+emails\s+queued\s+0\/3\s+\dm ago/.test(l))).toBe(true);
      expect(lines[3]).toMatch(/^more: loom jobs ls --cursor \S+ --name "send-receipt" --limit 2$/);
      const cursor = lines[3]!.split(' ')[5]!;
      const next = await loom(['jobs', 'ls', '--json', '--name', 'send-receipt', '--limit', '2', '--cursor', cursor], env);
      const page = JSON.parse(next.stdout) as { jobs: { payload?: unknown; name: string }[]; next?: string };
      expect(page.jobs).toHaveLength(1);
      expect(page.next).toBeUndefined();
      expect(decodeCursor(cursor)).toBeTruthy();
      const reports = JSON.parse((await loom(['--json', 'jobs', 'ls', '--queue', 'reports', '--status', 'queued,running'], env)).stdout) as {
        jobs: { name: string }[];
      };
      expect(reports.jobs.map((j) => j.name)).toEqual(['nightly-report']);
    },
    SPAWNS,
  );

  it(
    'shows a batch: its counts and failed members; a member shows its batch; an unknown batch exits 1',
    async () => {
      const { store, env } = await seeded();
      const batch = await store.createBatch({ jobs: [job({ payload: { order: 1 } }), job({ payload: { order: 2 } })], callbacks: {} }, { now: now() });
      const [first, second] = batch.jobIds;
      await store.cancelJob(second!, { now: now() });
      const shown = await loom(['batches', 'show', batch.id], env);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(/total\s+2/);
      expect(shown.stdout).toMatch(/cancelled\s+1/);
      expect(shown.stdout).toMatch(/pending\s+1/);
      expect(shown.stdout).toContain(`failed jobs  ${second}`);
      expect(JSON.parse((await loom(['batches', 'show', batch.id, '--json'], env)).stdout)).toMatchObject({ id: batch.id, total: 2, failedJobIds: [second] });
      expect((await loom(['jobs', 'show', first!], env)).stdout).toMatch(new RegExp(`batch\\s+${batch.id}`));
      expect(await loom(['batches', 'show', 'ffffffffffffffffffffffff'], env)).toMatchObject({ code: 1, stderr: expect.stringContaining('no batch') });
      expect(await loom(['batches', 'show', 'nope'], env)).toMatchObject({ code: 2 });
    },
    SPAWNS,
  );

  it(
    'shows, cancels, retries and removes a job; what cannot change exits 1',
    async () => {
      const { store, env } = await seeded();
      const [{ id }] = await store.enqueue([job({ payload: { order: 42 } })], { now: now() });
      const shown = await loom(['jobs', 'show', id], env);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(/status\s+queued/);
      expect(shown.stdout).toContain('{"order":42}');
      expect(JSON.parse((await loom(['jobs', 'show', id, '--json'], env)).stdout)).toMatchObject({ id, payload: { order: 42 } });

      expect(await loom(['jobs', 'cancel', id, '--reason', 'customer asked'], env)).toMatchObject({ code: 0, stdout: `cancelled job ${id}\n` });
      expect(await store.getJob(id)).toMatchObject({ status: 'cancelled', cancelReason: 'customer asked' });
      expect(await loom(['jobs', 'cancel', id], env)).toMatchObject({ code: 1, stderr: expect.stringContaining('is cancelled: nothing to cancel') });
      expect(await loom(['jobs', 'retry', id], env)).toMatchObject({ code: 0, stdout: `job ${id} is queued again\n` });
      expect(await loom(['jobs', 'retry', id], env)).toMatchObject({ code: 1, stderr: expect.stringContaining('only dead or cancelled jobs') });
      expect(await loom(['jobs', 'rm', id], env)).toMatchObject({ code: 1, stderr: expect.stringContaining('cancel it first') });

      const { id: running } = await claimOne(store);
      expect(running).toBe(id);
      const requested = await loom(['jobs', 'cancel', id, '--json'], env);
      expect(requested.code).toBe(0);
      expect(JSON.parse(requested.stdout)).toEqual({ cancelled: true, status: 'running' });
      expect(await store.getJob(id)).toMatchObject({ status: 'running', cancelRequestedAt: expect.any(Date) });

      const [{ id: done }] = await store.enqueue([job({ name: 'done', queue: 'other' })], { now: now() });
      const claimed = await claimOne(store, 'done', 'other');
      await store.complete(claimed.lease, { now: now() });
      expect(await loom(['jobs', 'rm', done], env)).toMatchObject({ code: 0, stdout: `removed job ${done} (completed)\n` });
      expect(await store.getJob(done)).toBeNull();
      const unknown = 'abcdefabcdefabcdefabcdef';
      for (const action of ['show', 'cancel', 'retry', 'rm']) {
        const run = action === 'show' ? loomBinary : loom;
        expect(await run(['jobs', action, unknown], env)).toMatchObject({ code: 1, stderr: `loom: no job ${unknown}\n` });
      }
    },
    SPAWNS,
  );
});

describe('loom jobs logs', () => {
  it(
    "prints a job's kept ctx.log lines (time, level, attempt, message, fields), JSON with --json; an unknown id exits 1",
    async () => {
      const { store, env } = await seeded();
      const [{ id }] = await store.enqueue([job()], { now: now() });
      expect(await loom(['jobs', 'logs', id], env)).toMatchObject({
        code: 0,
        stdout: `job ${id} kept no log lines (nothing was written to ctx.log, or not yet)\n`,
      });
      const { lease } = await claimOne(store);
      const at = new Date('2026-12-05T10:00:00.000Z');
      await store.appendLogs(
        lease,
        [
          { at, level: 'info', msg: 'charging\ncard', attempt: 1, fields: { orderId: 'o1' } },
          { at: new Date(at.getTime() + 1_500), level: 'error', msg: 'declined', attempt: 1 },
        ],
        now(),
      );
      const shown = await loom(['jobs', 'logs', id], env);
      expect(shown).toMatchObject({ code: 0, stderr: '' });
      expect(shown.stdout).toBe(
        ['2026-12-05T10:00:00.000Z  INFO   #1  charging card  {"orderId":"o1"}', '2026-12-05T10:00:01.500Z  ERROR  #1  declined', ''].join('\n'),
      );
      expect(JSON.parse((await loom(['jobs', 'logs', id, '--json'], env)).stdout)).toEqual([
        { at: '2026-12-05T10:00:00.000Z', level: 'info', msg: 'charging\ncard', attempt: 1, fields: { orderId: 'o1' } },
        { at: '2026-12-05T10:00:01.500Z', level: 'error', msg: 'declined', attempt: 1 },
      ]);
      expect((await loom(['jobs', 'show', id], env)).stdout).toMatch(new RegExp(`logs\\s+2 lines kept \\(loom jobs logs ${id}\\)`));
      const unknown = 'abcdefabcdefabcdefabcdef';
      expect(await loom(['jobs', 'logs', unknown], env)).toMatchObject({ code: 1, stderr: `loom: no job ${unknown}\n` });
      expect(await loom(['jobs', 'logs'], env)).toMatchObject({ code: 2 });
    },
    SPAWNS,
  );
});

describe('loom: dependencies', () => {
  it(
    'shows what a job depends on and its dependents; cancel --children cancels the dependents too',
    async () => {
      const { store, env } = await seeded();
      const [{ id: a }] = await store.enqueue([job()], { now: now() });
      const [{ id: b }] = await store.enqueue([job({ dependsOn: [a], onDependencyFailure: 'cancel' })], { now: now() });
      const [{ id: c }] = await store.enqueue([job({ dependsOn: [b] })], { now: now() });
      const dependent = await loom(['jobs', 'show', b], env);
      expect(dependent.stdout).toMatch(new RegExp(`depends on\\s+${a} \\(waiting\\)`));
      expect(dependent.stdout).toMatch(/on dep. failure\s+cancel/);
      expect(dependent.stdout).toMatch(new RegExp(`dependents\\s+${c}`));
      expect((await loom(['jobs', 'show', a], env)).stdout).toMatch(new RegExp(`dependents\\s+${b}`));
      expect(await loom(['jobs', 'cancel', a, '--children'], env)).toMatchObject({
        code: 0,
        stdout: `cancelled job ${a}\ncancelled 2 of its children and dependents\n`,
      });
      for (const id of [a, b, c]) expect((await store.getJob(id))?.status).toBe('cancelled');
      expect(await loom(['jobs', 'rm', a, '--children'], env)).toMatchObject({
        code: 2,
        stderr: expect.stringContaining("'jobs rm' does not take --children"),
      });
    },
    SPAWNS,
  );
});

describe('loom: dead letters, queues, schedules, stats', () => {
  it(
    'lists, retries one or all (with progress) and purges dead letters',
    async () => {
      const { store, env } = await seeded();
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        await store.enqueue([job({ name: i < 3 ? 'send-receipt' : 'other' })], { now: now() });
        const { id, lease } = await claimOne(store, i < 3 ? 'send-receipt' : 'other');
        await store.deadLetter(lease, { reason: `smtp said no #${i}`, now: now() });
        ids.push(id);
      }
      const listed = await loom(['dlq', 'ls', '--name', 'send-receipt'], env);
      expect(listed.code).toBe(0);
      expect(listed.stdout.trim().split('\n')).toHaveLength(4);
      expect(listed.stdout).toContain('smtp said no #2');
      expect(await loom(['dlq', 'retry', ids[0]!], env)).toMatchObject({ code: 0 });
      expect(await loom(['dlq', 'retry', ids[0]!], env)).toMatchObject({ code: 1 });
      const all = await loomBinary(['dlq', 'retry', '--all', '--name', 'send-receipt'], env);
      expect(all).toMatchObject({ code: 0, stdout: 'retried 2 dead letters\n' });
      expect(all.stderr).toContain('retrying dead letters: 2 handled');
      expect((await store.listDeadLetters({})).map((d) => d.id)).toEqual([ids[3]]);
      expect(await loom(['dlq', 'purge', '--yes', '--json'], env)).toMatchObject({ code: 0, stdout: expect.stringContaining('"purged": 1') });
      expect(await store.listDeadLetters({})).toEqual([]);
    },
    SPAWNS,
  );

  it(
    'lists, pauses and resumes queues, and prints stats',
    async () => {
      const { store, env } = await seeded();
      await store.enqueue([job(), job({ queue: 'reports', name: 'nightly-report' })], { now: now() });
      expect(await loom(['queues', 'pause', 'emails'], env)).toMatchObject({ code: 0, stdout: expect.stringContaining('paused queue emails') });
      expect(await store.pausedQueues()).toEqual(['emails']);
      const listed = await loom(['queues', 'ls'], env);
      expect(listed.stdout).toMatch(/^QUEUE\s+STATE\s+QUEUED\s+RUNNING\s+WAITING\s+COMPLETED\s+DEAD\s+CANCELLED\s+OLDEST QUEUED\n/);
      expect(listed.stdout).toMatch(/emails\s+paused\s+1\s+0\s+0\s+0\s+0\s+0\s+(just now|\d+s ago)/);
      expect(await loom(['queues', 'resume', 'emails'], env)).toMatchObject({ code: 0 });
      expect(await store.pausedQueues()).toEqual([]);
      const stats = JSON.parse((await loomBinary(['stats', '--json'], env)).stdout) as { totals: Record<string, number> };
      expect(stats.totals).toEqual({ queued: 2, running: 0, waiting: 0, completed: 0, dead: 0, cancelled: 0 });
      expect((await loom(['stats'], env)).stdout).toMatch(/total\s+2\s+0\s+0\s+0\s+0\s+0\n$/);
    },
    SPAWNS,
  );

  it(
    'lists, pauses, resumes and triggers schedules an engine described; unknown ones exit 1',
    async () => {
      const { store, env } = await seeded();
      await store.describeSchedule(
        'nightly-report',
        { cron: '0 3 * * *', timezone: 'UTC', job: { queue: 'reports', payload: { full: true }, priority: 0, maxAttempts: 2 } },
        now(),
      );
      const listed = await loom(['schedules', 'ls'], env);
      // The CLI reads the wall clock: in the last minute before 03:00 UTC the next fire is seconds away.
      expect(listed.stdout).toMatch(/nightly-report\s+0 3 \* \* \*\s+UTC\s+active\s+-\s+(in \d+[hms]|just now)/);
      expect(await loom(['schedules', 'pause', 'nightly-report'], env)).toMatchObject({ code: 0 });
      expect((await store.listSchedules())[0]).toMatchObject({ paused: true });
      expect(await loom(['schedules', 'resume', 'nightly-report'], env)).toMatchObject({ code: 0 });
      expect((await store.listSchedules())[0]).toMatchObject({ paused: false });
      const triggered = await loom(['schedules', 'trigger', 'nightly-report', '--json'], env);
      expect(triggered.code).toBe(0);
      const { jobId } = JSON.parse(triggered.stdout) as { jobId: string };
      expect(await store.getJob(jobId)).toMatchObject({ name: 'nightly-report', queue: 'reports', payload: { full: true }, maxAttempts: 2, status: 'queued' });
      expect(await loom(['schedules', 'trigger', 'weekly'], env)).toMatchObject({ code: 1, stderr: expect.stringContaining('No schedule named "weekly"') });
    },
    SPAWNS,
  );
});

describe('loom: wait tokens', () => {
  it(
    'completes a token with a JSON output checked against its schema, rejects another; a second settlement says it changed nothing',
    async () => {
      const { store, env } = await seeded();
      await store.enqueue([job({ name: 'review' }), job({ name: 'review' })], { now: now() });
      const first = await claimOne(store, 'review');
      const second = await claimOne(store, 'review');
      const schema = { type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] };
      await store.createWaitToken(first.lease, { id: 'wt_cli_one', jobId: first.id, status: 'pending', createdAt: now(), schema }, now());
      await store.createWaitToken(second.lease, { id: 'wt_cli_two', jobId: second.id, status: 'pending', createdAt: now() }, now());

      const invalid = await loom(['tokens', 'complete', 'wt_cli_one', '--json', '{"approved":"yes"}'], env);
      expect(invalid).toMatchObject({ code: 1, stderr: expect.stringContaining('the output at approved is refused: Invalid input: expected boolean') });
      expect(await loom(['tokens', 'complete', 'wt_cli_one', '--json', '{not json'], env)).toMatchObject({ code: 2 });
      expect(await store.getWaitToken('wt_cli_one')).toMatchObject({ status: 'pending' });

      const done = await loom(['tokens', 'complete', 'wt_cli_one', '--json', '{"approved":true}'], env);
      expect(done).toMatchObject({ code: 0, stdout: 'token wt_cli_one completed: its run resumes\n' });
      expect(await store.getWaitToken('wt_cli_one')).toMatchObject({ status: 'completed', output: { approved: true } });
      const again = await loom(['tokens', 'complete', 'wt_cli_one', '--json', '{"approved":false}', '--json'], env);
      expect(JSON.parse(again.stdout)).toEqual({ id: 'wt_cli_one', completed: false, status: 'completed' });

      expect(await loom(['tokens', 'reject', 'wt_cli_two', '--reason', 'over budget'], env)).toMatchObject({ code: 0 });
      expect(await store.getWaitToken('wt_cli_two')).toMatchObject({ status: 'rejected', reason: 'over budget' });
      expect(await loom(['tokens', 'reject', 'wt_nope'], env)).toMatchObject({ code: 1, stderr: 'loom: no wait token wt_nope\n' });
    },
    SPAWNS,
  );

  it(
    'a token of a job that ended says so: nothing resumes, nothing changes',
    async () => {
      const { store, env } = await seeded();
      await store.enqueue([job({ name: 'review' })], { now: now() });
      const claimed = await claimOne(store, 'review');
      await store.createWaitToken(claimed.lease, { id: 'wt_cli_gone', jobId: claimed.id, status: 'pending', createdAt: now() }, now());
      await store.wait(claimed.lease, { for: { signal: waitTokenSignal('wt_cli_gone') }, now: now() });
      await store.cancelJob(claimed.id, { now: now() });

      const done = await loom(['tokens', 'complete', 'wt_cli_gone', '--json', '{}'], env);
      expect(done).toMatchObject({
        code: 0,
        stdout: `token wt_cli_gone is cancelled (its job ${claimed.id} is cancelled and no longer waits for it): nothing resumes, nothing changed\n`,
      });
      expect(await store.getJob(claimed.id)).toMatchObject({ status: 'cancelled', signals: [] });
      const json = await loom(['tokens', 'reject', 'wt_cli_gone', '--json'], env);
      expect(JSON.parse(json.stdout)).toEqual({ id: 'wt_cli_gone', completed: false, status: 'cancelled', reason: endedJobReason(claimed.id, 'cancelled') });
    },
    SPAWNS,
  );
});

describe('loom: jobs fork', () => {
  it(
    'makes a new job keeping the steps before --from-step, with --payload when given; the original is unchanged',
    async () => {
      const { store, env } = await seeded();
      await store.enqueue([job({ name: 'fulfil' })], { now: now() });
      const { id, lease } = await claimOne(store, 'fulfil');
      await store.recordStep(lease, { name: 'charge', kind: 'step', status: 'completed', result: { chargeId: 'ch-1' }, at: now(), seq: 0 }, now());
      await store.recordStep(lease, { name: 'ship', kind: 'step', status: 'completed', result: 'bad', at: now(), seq: 1 }, now());
      const before = await store.getJob(id);

      expect(await loom(['jobs', 'fork', id], env)).toMatchObject({ code: 2, stderr: expect.stringContaining('--from-step') });
      const forked = await loom(['jobs', 'fork', id, '--from-step', 'ship', '--payload', '{"order":2}', '--json'], env);
      expect(forked.code).toBe(0);
      const { id: forkId, keptSteps } = JSON.parse(forked.stdout) as { id: string; keptSteps: string[] };
      expect(keptSteps).toEqual(['charge']);
      expect(await store.getJob(forkId)).toMatchObject({
        status: 'queued',
        name: 'fulfil',
        payload: { order: 2 },
        forkedFrom: id,
        steps: [{ name: 'charge' }],
      });
      expect(await store.getJob(id)).toEqual(before);
      expect(await loom(['jobs', 'fork', id, '--from-step', 'nope'], env)).toMatchObject({
        code: 2,
        stderr: expect.stringContaining('recorded no step "nope"'),
      });
    },
    SPAWNS,
  );
});

describe('loom: jobs export', () => {
  it(
    'writes the run record as JSON; an unknown job exits 1',
    async () => {
      const { store, env } = await seeded();
      await store.enqueue([job({ name: 'fulfil' })], { now: now() });
      const { id, lease } = await claimOne(store, 'fulfil');
      await store.recordStep(lease, { name: 'charge', kind: 'step', status: 'completed', result: { chargeId: 'ch-1' }, at: now(), seq: 0 }, now());
      const exported = await loom(['jobs', 'export', id], env);
      expect(exported.code).toBe(0);
      expect(JSON.parse(exported.stdout)).toMatchObject({
        format: 'loom-run',
        version: 1,
        job: { id, name: 'fulfil', status: 'running' },
        payload: { order: 1 },
        steps: [{ name: 'charge', result: { chargeId: 'ch-1' } }],
      });
      expect(await loom(['jobs', 'export', '0123456789abcdef01234567'], env)).toMatchObject({ code: 1 });
    },
    SPAWNS,
  );
});
