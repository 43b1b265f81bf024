import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Container, inject, injectable } from 'inversify';
import { Job, Loom, LoomError, MemoryStore, readJobOptions, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { z } from 'zod';

const create = (jobs: Parameters<typeof Loom.create>[0]['jobs'], container = new Container()) =>
  Loom.create({
    container,
    store: new MemoryStore(),
    jobs,
    logger: {
      debug() {},
      info() {},
      warn() {},
      error() {},
      child() {
        return this;
      },
    },
  });

async function startupError(jobs: Parameters<typeof Loom.create>[0]['jobs']): Promise<LoomError> {
  try {
    await create(jobs);
  } catch (err) {
    if (LoomError.is(err)) return err;
    throw err;
  }
  throw new Error('Loom.create succeeded');
}

describe('@Job options are validated at Loom.create', () => {
  it.each([
    ['retries: -1', { retries: -1 }, 'retries', 'must be >= 0'],
    ['retries: 1.5', { retries: 1.5 }, 'retries', 'must be an integer'],
    ['timeout: "soon"', { timeout: 'soon' }, 'timeout', 'must be a duration'],
    ['timeout: 0', { timeout: 0 }, 'timeout', 'longer than 0'],
    ['concurrency: 0', { concurrency: 0 }, 'concurrency', 'must be >= 1'],
    ['name: ""', { name: '' }, 'name', 'non-empty'],
    ['queue: 5', { queue: 5 }, 'queue', 'must be a string'],
    ['payload: {}', { payload: {} }, 'payload', 'zod schema'],
    ['idempotencyKey: "k"', { idempotencyKey: 'k' }, 'idempotencyKey', 'must be a function'],
    ['backoff: "fast"', { backoff: 'fast' }, 'backoff', "must be { type: 'fixed'"],
    ['backoff.type', { backoff: { type: 'random', delay: '1s' } }, 'backoff.type', "must be 'fixed', 'linear' or 'exponential'"],
    ['backoff.delay', { backoff: { type: 'fixed', delay: 'soon' } }, 'backoff.delay', 'must be a duration'],
    ['backoff.jitter', { backoff: { type: 'fixed', delay: '1s', jitter: 'some' } }, 'backoff.jitter', "must be 'none', 'full' or 'equal'"],
    ['a misspelt option', { retry: 3 }, 'retry', 'is not a known option'],
  ])('refuses %s with an error naming the class and the option', async (_label, options, option, detail) => {
    class BadOptions {
      async run(): Promise<void> {}
    }
    Job(options as never)(BadOptions);
    const err = await startupError([BadOptions]);
    expect(err.code).toBe('INVALID_JOB_OPTIONS');
    expect(err.message).toContain('@Job on class BadOptions');
    expect(err.message).toContain(`option "${option}"`);
    expect(err.message).toContain(detail);
  });

  it('refuses two classes with one job name, naming both', async () => {
    @Job({ name: 'send-receipt' })
    class SendReceipt {
      async run(): Promise<void> {}
    }
    @Job({ name: 'send-receipt' })
    class SendReceiptV2 {
      async run(): Promise<void> {}
    }
    const err = await startupError([SendReceipt, SendReceiptV2]);
    expect(err.code).toBe('DUPLICATE_JOB_NAME');
    expect(err.message).toMatch(/"send-receipt" is used by both SendReceipt and SendReceiptV2/);
  });

  it('refuses a class without run, and a class without @Job', async () => {
    class NoRun {}
    Job()(NoRun as never);
    const noRun = await startupError([NoRun as never]);
    expect(noRun.code).toBe('INVALID_JOB_CLASS');
    expect(noRun.message).toMatch(/NoRun has no run\(payload, ctx\) method/);

    class Undecorated {
      async run(): Promise<void> {}
    }
    const undecorated = await startupError([Undecorated]);
    expect(undecorated.message).toMatch(/Undecorated has no @Job/);
  });

  it('refuses a class decorated twice', async () => {
    @Job({ name: 'twice-a' })
    @Job({ name: 'twice-b' })
    class Twice {
      async run(): Promise<void> {}
    }
    const err = await startupError([Twice]);
    expect(err.message).toBe('Job class Twice has more than one @Job(...) decorator; keep one');
  });

  it('names the class when the container cannot build it', async () => {
    @Job()
    class NeedsMissing {
      constructor(@inject('Missing') readonly missing: unknown) {}
      async run(): Promise<void> {}
    }
    const err = await startupError([NeedsMissing]);
    expect(err.code).toBe('INVALID_JOB_CLASS');
    expect(err.message).toMatch(/NeedsMissing could not be built by the container/);
  });
});

describe('@Job typing', () => {
  it("checks at compile time that run accepts the payload schema's type", () => {
    const Amount = z.object({ cents: z.number() });
    // @ts-expect-error run takes { label: string }, the schema yields { cents: number }
    @Job({ name: 'mismatch', payload: Amount })
    class Mismatch {
      async run(p: { label: string }): Promise<string> {
        return p.label;
      }
    }
    @Job({ name: 'match', payload: Amount, idempotencyKey: (p) => `amount:${p.cents}` })
    class Match {
      async run(p: z.infer<typeof Amount>): Promise<number> {
        return p.cents;
      }
    }
    expect(readJobOptions(Mismatch)?.payload).toBe(Amount);
    expect(readJobOptions(Match)?.idempotencyKey?.({ cents: 5 })).toBe('amount:5');
  });
});

describe('discovery through inversify', () => {
  @injectable()
  class Mailer {
    readonly sent: string[] = [];
    async send(to: string): Promise<void> {
      this.sent.push(to);
    }
  }

  const Receipt = z.object({ email: z.string().email() });

  @Job({ name: 'receipt', payload: Receipt })
  class SendReceipt {
    constructor(@inject(Mailer) private readonly mailer: Mailer) {}
    async run(payload: z.infer<typeof Receipt>, _ctx: JobContext): Promise<void> {
      await this.mailer.send(payload.email);
    }
  }

  it('builds job classes through the container, so injected dependencies are used', async () => {
    const container = new Container();
    container.bind(Mailer).toSelf().inSingletonScope();
    const t = await createTestLoom({ container, jobs: [SendReceipt] });
    await t.enqueue(SendReceipt, { email: 'a@b.co' });
    await t.runUntilIdle();
    expect(container.get(Mailer).sent).toEqual(['a@b.co']);
    await t.stop();
  });

  it('uses an existing container binding of the job class instead of adding one', async () => {
    const container = new Container();
    const fake = new Mailer();
    container.bind(Mailer).toConstantValue(fake);
    container.bind(SendReceipt).toSelf();
    const t = await createTestLoom({ container, jobs: [SendReceipt] });
    await t.enqueue(SendReceipt, { email: 'x@y.co' });
    await t.runUntilIdle();
    expect(fake.sent).toEqual(['x@y.co']);
    await t.stop();
  });

  it('accepts an @injectable() written above @Job, with its scope, and builds the job', async () => {
    @injectable('Singleton')
    @Job({ name: 'injectable-above' })
    class InjectableAbove {
      constructor(@inject(Mailer) private readonly mailer: Mailer) {}
      async run(): Promise<string> {
        await this.mailer.send('above@example.com');
        return 'ran';
      }
    }
    const container = new Container();
    container.bind(Mailer).toSelf().inSingletonScope();
    const t = await createTestLoom({ container, jobs: [InjectableAbove] });
    const { id } = await t.enqueue(InjectableAbove);
    await t.runUntilIdle();
    expect((await t.getJob(id))?.result).toBe('ran');
    expect(container.get(Mailer).sent).toEqual(['above@example.com']);
    await t.stop();
  });

  it('coexists with an @injectable() written below @Job', async () => {
    @Job({ name: 'both-decorators' })
    @injectable()
    class BothDecorators {
      async run(): Promise<string> {
        return 'ran';
      }
    }
    const t = await createTestLoom({ jobs: [BothDecorators] });
    const { id } = await t.enqueue(BothDecorators);
    await t.runUntilIdle();
    expect((await t.getJob(id))?.result).toBe('ran');
    await t.stop();
  });
});
