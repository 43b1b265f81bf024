import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { describeWorkflowVersioning } from '@loom/testing/jest';

// Changing a workflow while runs are in flight (issue 35, item 1). The scenario of v1 and v2 runs
// is shared with MongoStore (describeWorkflowVersioning); here what happens without ctx.patched,
// and that an answer holds across attempts.

let version: 1 | 2 = 1;

describeWorkflowVersioning('MemoryStore', () => ({ store: new MemoryStore() }));

describe('ctx.patched: changing a workflow while runs are in flight', () => {
  it('without ctx.patched, the same change fails a run that had passed that point with NON_DETERMINISM', async () => {
    version = 1;
    @Job({ name: 'unguarded', retries: 0 })
    class Unguarded {
      async run(_: undefined, ctx: JobContext): Promise<void> {
        await ctx.step('b', () => 1);
        if (version === 2) await ctx.step('extra', () => 2);
        await ctx.sleep('nap', '1h');
      }
    }
    const t = await createTestLoom({ jobs: [Unguarded] });
    const { id } = await t.enqueue(Unguarded);
    await t.runUntilIdle(); // in its nap, recorded at position 1
    version = 2;
    await t.advance('1h');
    const job = await t.getJob(id);
    expect(job?.status).toBe('dead');
    expect(job?.errors.at(-1)?.code).toBe('NON_DETERMINISM');
    await t.stop();
  });

  it('answers the same on every later attempt, and refuses an empty change id', async () => {
    let answers: boolean[] = [];
    let fail = true;
    @Job({ name: 'retried', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
    class Retried {
      async run(_: undefined, ctx: JobContext): Promise<void> {
        answers.push(await ctx.patched('x'));
        if (fail) {
          fail = false;
          throw new Error('first attempt fails after the decision');
        }
      }
    }
    @Job({ name: 'empty-id', retries: 0 })
    class EmptyId {
      async run(_: undefined, ctx: JobContext): Promise<boolean> {
        return ctx.patched('');
      }
    }
    const t = await createTestLoom({ jobs: [Retried, EmptyId] });
    const { id } = await t.enqueue(Retried);
    await t.runUntilIdle();
    await t.advance('1s');
    expect((await t.getJob(id))?.status).toBe('completed');
    expect(answers).toEqual([true, true]);
    answers = [];
    const bad = await t.enqueue(EmptyId);
    await t.runUntilIdle();
    expect((await t.getJob(bad.id))?.errors.at(-1)?.code).toBe('INVALID_ARGUMENT');
    await t.stop();
  });
});
