import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, LoomError, MemoryStore, type JobClass, type JobContext, type JobRecord, type LoomErrorCode } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { createTestLoom, type TestLoom } from '@loom/testing';
import { z } from 'zod';
import { deferred } from './deferred.js';

// The bad-input corpus: everything a user (or an attacker, through a user) can hand Loom that it
// must refuse with a typed error naming the problem, without changing the store; and everything a
// handler can do wrong, which must end in a proper failure record. One row per case.
// Payload rules already tested one by one live in enqueue.test.ts; here they sit with the rest.

const Order = z.object({ orderId: z.string(), items: z.array(z.unknown()).optional() });

@Job({ name: 'corpus-order', payload: Order })
class OrderJob {
  async run(): Promise<void> {}
}

@Job({ name: 'corpus-free', retries: 0 })
class FreeJob {
  async run(payload: unknown): Promise<unknown> {
    return payload;
  }
}

@Job({ name: 'corpus-keyed', idempotencyKey: (p: { key: unknown }) => p.key as string })
class KeyedJob {
  async run(): Promise<void> {}
}

@Job({
  name: 'corpus-key-throws',
  idempotencyKey: () => {
    throw new Error('no key today');
  },
})
class KeyThrowsJob {
  async run(): Promise<void> {}
}

@Job({ name: 'corpus-unregistered' })
class UnregisteredJob {
  async run(): Promise<void> {}
}

class Money {
  constructor(readonly cents: number) {}
}

/** What each row does, and with what it must end. */
type Row =
  | { kind: 'refused'; act: (t: TestLoom) => Promise<unknown>; code: LoomErrorCode; message: RegExp }
  | { kind: 'refused-at-create'; options: Record<string, unknown>; code: LoomErrorCode; message: RegExp }
  | { kind: 'stored-as-is'; payload: unknown }
  | { kind: 'accepted-name'; options: { name: string; queue?: string } }
  | { kind: 'handler-fails'; run: (ctx: JobContext) => Promise<unknown>; message: RegExp }
  | { kind: 'result-dropped'; run: () => Promise<unknown>; path: string };

const cyclic = (): Record<string, unknown> => {
  const o: Record<string, unknown> = { orderId: 'o1' };
  o.items = [{ back: o }];
  return o;
};
const nested = (depth: number): unknown => (depth === 0 ? 'leaf' : { d: nested(depth - 1) });
const circularThrown = (): unknown => {
  const o: Record<string, unknown> = { reason: 'circular' };
  o.self = o;
  return o;
};
const free = (payload: unknown) => (t: TestLoom) => t.enqueue(FreeJob, payload);
const order = (payload: unknown) => (t: TestLoom) => t.enqueue(OrderJob, payload as z.infer<typeof Order>);
const keyed = (key: unknown) => (t: TestLoom) => t.enqueue(FreeJob, { k: 1 }, { idempotencyKey: key as string });
const enqueueOpts = (opts: Record<string, unknown>) => (t: TestLoom) => t.enqueue(FreeJob, { k: 1 }, opts);
/** A decorator option refused when the engine is created, with an error naming the option. */
const withJob = (options: Record<string, unknown>): Extract<Row, { kind: 'refused-at-create' }> => ({
  kind: 'refused-at-create',
  options,
  code: 'INVALID_JOB_OPTIONS',
  message: new RegExp(`"?${Object.keys(options)[0]}`),
});

const CORPUS: [string, Row][] = [
  // payloads failing the schema
  ['schema: wrong type', { kind: 'refused', act: order({ orderId: 5 }), code: 'INVALID_PAYLOAD', message: /orderId.*string/s }],
  ['schema: missing field', { kind: 'refused', act: order({}), code: 'INVALID_PAYLOAD', message: /orderId/ }],
  ['schema: undefined payload', { kind: 'refused', act: order(undefined), code: 'INVALID_PAYLOAD', message: /corpus-order/ }],
  ['schema: null payload', { kind: 'refused', act: order(null), code: 'INVALID_PAYLOAD', message: /corpus-order/ }],
  ['schema: array instead of object', { kind: 'refused', act: order([{ orderId: 'o1' }]), code: 'INVALID_PAYLOAD', message: /object/ }],
  // payloads that are not plain data
  ['a function as the payload', { kind: 'refused', act: free(() => 1), code: 'INVALID_PAYLOAD', message: /function/ }],
  ['a function deep inside', { kind: 'refused', act: free({ a: [{ b: { cb: () => 1 } }] }), code: 'INVALID_PAYLOAD', message: /a\[0\]\.b\.cb.*function/ }],
  ['a symbol value', { kind: 'refused', act: free({ s: Symbol('s') }), code: 'INVALID_PAYLOAD', message: /symbol/ }],
  ['a symbol key', { kind: 'refused', act: free({ [Symbol('hidden')]: 1 }), code: 'INVALID_PAYLOAD', message: /symbol/i }],
  ['a BigInt', { kind: 'refused', act: free({ n: 2n ** 70n }), code: 'INVALID_PAYLOAD', message: /BigInt/ }],
  ['a class instance', { kind: 'refused', act: free({ price: new Money(5) }), code: 'INVALID_PAYLOAD', message: /Money/ }],
  ['a Map', { kind: 'refused', act: free({ m: new Map([[1, 2]]) }), code: 'INVALID_PAYLOAD', message: /Map/ }],
  ['a Set', { kind: 'refused', act: free({ s: new Set([1]) }), code: 'INVALID_PAYLOAD', message: /Set/ }],
  ['a Promise', { kind: 'refused', act: free({ p: Promise.resolve(1) }), code: 'INVALID_PAYLOAD', message: /Promise/ }],
  ['a cycle through an array', { kind: 'refused', act: order(cyclic()), code: 'INVALID_PAYLOAD', message: /cycle/ }],
  [
    'an object that contains itself',
    {
      kind: 'refused',
      act: free(
        (() => {
          const o: Record<string, unknown> = {};
          o.o = o;
          return o;
        })(),
      ),
      code: 'INVALID_PAYLOAD',
      message: /cycle/,
    },
  ],
  [
    'a payload over maxPayloadSize (64 MiB)',
    { kind: 'refused', act: free({ blob: 'x'.repeat(65 * 1024 * 1024) }), code: 'PAYLOAD_TOO_LARGE', message: /maxPayloadSize of 67108864 bytes/ },
  ],
  ['an invalid Date', { kind: 'refused', act: free({ at: new Date('soon') }), code: 'INVALID_PAYLOAD', message: /invalid Date/ }],
  ['nesting deeper than MongoDB allows', { kind: 'refused', act: free(nested(150)), code: 'INVALID_PAYLOAD', message: /deep|nest/i }],
  // keys with `$` and `.`, and prototype keys: stored opaquely, read back as given
  ['keys starting with $', { kind: 'stored-as-is', payload: { $set: { admin: true }, $where: 'sleep(1000)' } }],
  ['keys containing dots', { kind: 'stored-as-is', payload: { 'a.b': 1, 'x.y.z': { '.': 2 } } }],
  ['a __proto__ key', { kind: 'stored-as-is', payload: JSON.parse('{"__proto__":{"polluted":true},"ok":1}') }],
  // idempotency keys that are not strings
  ['key: an operator object { $gt: "" }', { kind: 'refused', act: keyed({ $gt: '' }), code: 'INVALID_IDEMPOTENCY_KEY', message: /not a string/ }],
  [
    'key: { $ne: null } from the key function',
    { kind: 'refused', act: (t) => t.enqueue(KeyedJob, { key: { $ne: null } }), code: 'INVALID_IDEMPOTENCY_KEY', message: /not a string/ },
  ],
  ['key: an array', { kind: 'refused', act: keyed(['a']), code: 'INVALID_IDEMPOTENCY_KEY', message: /not a string/ }],
  ['key: null', { kind: 'refused', act: keyed(null), code: 'INVALID_IDEMPOTENCY_KEY', message: /not a string/ }],
  [
    'key: the key function throws',
    { kind: 'refused', act: (t) => t.enqueue(KeyThrowsJob, { key: 'k' }), code: 'INVALID_IDEMPOTENCY_KEY', message: /no key today/ },
  ],
  // enqueue options
  ['delay: negative', { kind: 'refused', act: enqueueOpts({ delay: -5 }), code: 'INVALID_ARGUMENT', message: /delay/ }],
  ['runAt: an invalid Date', { kind: 'refused', act: enqueueOpts({ runAt: new Date('nope') }), code: 'INVALID_ARGUMENT', message: /runAt/ }],
  ['runAt: a string', { kind: 'refused', act: enqueueOpts({ runAt: '2026-01-01' }), code: 'INVALID_ARGUMENT', message: /runAt/ }],
  ['priority: not a number', { kind: 'refused', act: enqueueOpts({ priority: 'high' }), code: 'INVALID_ARGUMENT', message: /priority/ }],
  [
    'a job class the engine does not know',
    { kind: 'refused', act: (t) => t.enqueue(UnregisteredJob, undefined), code: 'JOB_NOT_REGISTERED', message: /UnregisteredJob is not registered/ },
  ],
  // job and queue names
  ['name: empty', withJob({ name: '' })],
  ['name: only spaces', withJob({ name: '   ' })],
  ['name: not a string', withJob({ name: 42 })],
  ['name: 201 characters', withJob({ name: 'n'.repeat(201) })],
  ['queue: empty', withJob({ queue: '' })],
  ['queue: an object', withJob({ queue: { $gt: '' } })],
  ['name with dots, $, slashes and emoji', { kind: 'accepted-name', options: { name: '$send.receipt/v2 ✉', queue: 'mail.$urgent' } }],
  // other decorator options
  ['retries: negative', withJob({ retries: -1 })],
  ['retries: fractional', withJob({ retries: 1.5 })],
  ['retries: a string', withJob({ retries: 'three' })],
  ['timeout: zero', withJob({ timeout: 0 })],
  ['timeout: not a duration', withJob({ timeout: 'soon' })],
  ['backoff: unknown type', withJob({ backoff: { type: 'cubic', delay: '1s' } })],
  ['backoff: a string', withJob({ backoff: 'fast' })],
  ['concurrency: zero', withJob({ concurrency: 0 })],
  ['a misspelt option', withJob({ retry: 3 })],
  ['payload: not a zod schema', withJob({ payload: { orderId: 'string' } })],
  // cron and time zones
  ['cron: not an expression', { kind: 'refused-at-create', options: { schedule: 'every day' }, code: 'INVALID_JOB_OPTIONS', message: /every day/ }],
  ['cron: minute 61', { kind: 'refused-at-create', options: { schedule: '61 * * * *' }, code: 'INVALID_JOB_OPTIONS', message: /61/ }],
  [
    'cron: unknown time zone',
    {
      kind: 'refused-at-create',
      options: { schedule: { cron: '0 3 * * *', timezone: 'Mars/Olympus_Mons' } },
      code: 'INVALID_JOB_OPTIONS',
      message: /Mars\/Olympus_Mons/,
    },
  ],
  [
    'cron: bad catchUp',
    { kind: 'refused-at-create', options: { schedule: { cron: '0 3 * * *', catchUp: 'sometimes' } }, code: 'INVALID_JOB_OPTIONS', message: /catchUp/ },
  ],
  // handlers that fail badly
  [
    'handler throws a string',
    {
      kind: 'handler-fails',
      run: async () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the test is about handlers that throw a non-Error
        throw 'card declined';
      },
      message: /^card declined/,
    },
  ],
  [
    'handler throws an empty string',
    {
      kind: 'handler-fails',
      run: async () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the test is about handlers that throw a non-Error
        throw '';
      },
      message: /empty string/,
    },
  ],
  [
    'handler throws undefined',
    {
      kind: 'handler-fails',
      run: async () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the test is about handlers that throw a non-Error
        throw undefined;
      },
      message: /threw undefined/,
    },
  ],
  [
    'handler throws null',
    {
      kind: 'handler-fails',
      run: async () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the test is about handlers that throw a non-Error
        throw null;
      },
      message: /threw null/,
    },
  ],
  [
    'handler throws a number',
    {
      kind: 'handler-fails',
      run: async () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the test is about handlers that throw a non-Error
        throw 42;
      },
      message: /42/,
    },
  ],
  [
    'handler throws a circular object',
    {
      kind: 'handler-fails',
      run: async () => {
        throw circularThrown();
      },
      message: /non-Error value/,
    },
  ],
  [
    'handler throws an Error without a message',
    {
      kind: 'handler-fails',
      run: async () => {
        throw new Error();
      },
      message: /without a message/,
    },
  ],
  // A result that cannot be stored does not undo the run's effects: the job completes without it, loudly.
  ['handler returns a function', { kind: 'result-dropped', run: async () => ({ total: 3, format: () => '3' }), path: 'format' }],
  ['handler returns more than maxPayloadSize', { kind: 'result-dropped', run: async () => 'x'.repeat(65 * 1024 * 1024), path: '(root)' }],
];

async function snapshot(t: TestLoom): Promise<string> {
  const jobs = await t.store.listJobs({});
  return JSON.stringify({ jobs, dead: await t.store.listDeadLetters({}), stats: await t.store.stats() });
}

async function loomError(promise: Promise<unknown>): Promise<LoomError> {
  const outcome = await promise.then(
    () => new Error('accepted'),
    (err: unknown) => err,
  );
  if (!LoomError.is(outcome)) throw new Error(`expected a LoomError, got ${String(outcome)}`);
  return outcome;
}

/** A fresh engine with one job already stored, so "unchanged" means more than "still empty". */
async function seeded(jobs: JobClass[] = [OrderJob, FreeJob, KeyedJob, KeyThrowsJob], store = new MemoryStore()): Promise<TestLoom> {
  const t = await createTestLoom({ jobs, store });
  await t.enqueue(FreeJob, { seed: true }, { delay: '1h' });
  return t;
}

let classes = 0;
function jobClass(options: Record<string, unknown>, run: (ctx: JobContext) => Promise<unknown> = async () => undefined): JobClass {
  const cls = class {
    async run(_payload: unknown, ctx: JobContext): Promise<unknown> {
      return run(ctx);
    }
  };
  Object.defineProperty(cls, 'name', { value: `CorpusJob${++classes}` });
  Job(options as never)(cls);
  return cls as JobClass;
}

describe('bad input', () => {
  it.each(CORPUS)('%s', async (_label, row) => {
    if (row.kind === 'refused') {
      const t = await seeded();
      const before = await snapshot(t);
      const err = await loomError(row.act(t));
      expect(err.code).toBe(row.code);
      expect(err.message).toMatch(row.message);
      expect(await snapshot(t)).toBe(before);
      await t.stop();
    } else if (row.kind === 'refused-at-create') {
      const t = await seeded();
      const before = await snapshot(t);
      const bad = jobClass(row.options);
      const err = await loomError(createTestLoom({ jobs: [FreeJob, bad], store: t.store }));
      expect(err.code).toBe(row.code);
      expect(err.message).toMatch(row.message);
      expect(err.message).toContain(bad.name); // names the class to fix
      expect(await snapshot(t)).toBe(before);
      await t.stop();
    } else if (row.kind === 'stored-as-is') {
      const t = await seeded();
      const { id } = await t.enqueue(FreeJob, row.payload);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect((await t.getJob(id))?.payload).toEqual(row.payload);
      await t.runUntilIdle();
      const job = (await t.getJob(id)) as JobRecord;
      expect(job.status).toBe('completed');
      expect(job.result).toEqual(row.payload);
      await t.stop();
    } else if (row.kind === 'accepted-name') {
      const cls = jobClass({ ...row.options, retries: 0 }, async () => 'ran');
      const t = await createTestLoom({ jobs: [cls] });
      const { id } = await t.enqueue(cls, undefined);
      await t.runUntilIdle();
      expect(await t.getJob(id)).toMatchObject({ name: row.options.name, queue: row.options.queue, status: 'completed', result: 'ran' });
      await t.stop();
    } else if (row.kind === 'result-dropped') {
      const cls = jobClass({ retries: 0 }, row.run);
      const t = await createTestLoom({ jobs: [cls] });
      const { id } = await t.enqueue(cls, undefined);
      await t.runUntilIdle();
      const job = (await t.getJob(id)) as JobRecord;
      expect(job.status).toBe('completed');
      expect(job.result).toBeUndefined();
      expect(t.logs.some((e) => e.level === 'warn' && String(e.msg).includes(`not plain data at ${row.path}`))).toBe(true);
      await t.stop();
    } else {
      const cls = jobClass({ retries: 0 }, row.run);
      const t = await createTestLoom({ jobs: [cls] });
      const { id } = await t.enqueue(cls, undefined);
      await t.runUntilIdle();
      const job = (await t.getJob(id)) as JobRecord;
      expect(job.status).toBe('dead');
      expect(job.errors).toHaveLength(1);
      expect(job.errors[0].message).toMatch(row.message);
      expect(job.deadReason).toMatch(row.message);
      await t.stop();
    }
  });

  it('handler rejects after its timeout: the timeout decides, and the late rejection changes nothing', async () => {
    const aborted = deferred();
    let rejectLate!: (err: Error) => void;
    const late = new Promise<never>((_, reject) => (rejectLate = reject));
    // Ignores ctx.signal and rejects later anyway, when the test says so.
    const cls = jobClass({ retries: 0, timeout: '1s' }, (ctx) => {
      ctx.signal.addEventListener('abort', () => aborted.resolve());
      return late;
    });
    const t = await createTestLoom({ jobs: [cls] });
    const { id } = await t.enqueue(cls, undefined);
    await t.advance('1s');
    await aborted.promise;
    const timedOut = (await t.getJob(id)) as JobRecord;
    expect(timedOut.status).toBe('dead');
    expect(timedOut.errors.map((e) => e.message)).toEqual([expect.stringMatching(/timed out after 1000 ms/)]);
    expect(timedOut.deadReason).toMatch(/timed out after 1000 ms/);
    // The handler still runs, so its worker slot stays taken until it returns.
    expect(testHooks(t.loom).inFlight()).toHaveLength(1);

    rejectLate(new Error('too late'));
    await t.runUntilIdle();
    expect(testHooks(t.loom).inFlight()).toHaveLength(0);
    expect(await t.getJob(id)).toEqual(timedOut);
    expect(await t.store.listDeadLetters({})).toHaveLength(1);
    await t.stop();
  });
});
