import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Container } from 'inversify';
import { Job, Loom, LoomError, MemoryStore, type JobClass, type LoomOptions } from '@loom/core';
import { CaptureLogger, createTestLoom } from '@loom/testing';

/** A dependency the job gets through its constructor, from a DI that is not inversify. */
class Mailer {
  readonly sent: string[] = [];
  send(to: string): void {
    this.sent.push(to);
  }
}

@Job({ name: 'welcome' })
class SendWelcome {
  constructor(private readonly mailer: Mailer) {}
  async run(payload: { email: string }): Promise<void> {
    this.mailer.send(payload.email);
  }
}

async function createError(options: Omit<LoomOptions, 'store'>, store = new MemoryStore()): Promise<LoomError> {
  try {
    await Loom.create({ store, jobs: [SendWelcome], logger: new CaptureLogger(), ...options });
  } catch (err) {
    if (LoomError.is(err)) return err;
    throw err;
  }
  throw new Error('Loom.create succeeded');
}

describe('Loom.create({ resolve })', () => {
  it('builds each job class once through resolve, and runs use that instance', async () => {
    const mailer = new Mailer();
    const asked: JobClass[] = [];
    const t = await createTestLoom({
      jobs: [SendWelcome],
      resolve: async (jobClass) => {
        asked.push(jobClass);
        return new SendWelcome(mailer);
      },
    });
    await t.enqueue(SendWelcome, { email: 'a@b.co' });
    await t.enqueue(SendWelcome, { email: 'c@d.co' });
    await t.runUntilIdle();
    expect(mailer.sent.sort()).toEqual(['a@b.co', 'c@d.co']);
    expect(asked).toEqual([SendWelcome]);
    await t.stop();
  });

  it('refuses container and resolve together, naming both, before touching the store', async () => {
    const store = new MemoryStore();
    let initialised = false;
    store.init = async () => {
      initialised = true;
    };
    const err = await createError({ container: new Container(), resolve: () => new SendWelcome(new Mailer()) }, store);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/"container" and "resolve".*give one of them, not both/);
    expect(initialised).toBe(false);
  });

  it('refuses a resolve that is not a function, and a container that is not a Container', async () => {
    const notFunction = await createError({ resolve: 'SendWelcome' as never });
    expect(notFunction.message).toMatch(/Loom option "resolve": must be a function \(jobClass\) => instance/);
    const notContainer = await createError({ container: { get: () => null } as never });
    expect(notContainer.message).toMatch(/Loom option "container": must be an inversify Container; for any other DI pass `resolve/);
  });

  it('names the class when resolve throws or returns something without run', async () => {
    const throwing = await createError({
      resolve: () => {
        throw new Error('no provider for Mailer');
      },
    });
    expect(throwing.code).toBe('INVALID_JOB_CLASS');
    expect(throwing.message).toBe('Job class SendWelcome could not be built by resolve: no provider for Mailer');
    const empty = await createError({ resolve: async () => ({}) as never });
    expect(empty.message).toBe('Job class SendWelcome was resolved by resolve to something without a run method');
  });
});
