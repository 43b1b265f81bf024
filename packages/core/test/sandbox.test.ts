import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, Loom, MemoryStore, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { describeSandboxScenarios } from '@loom/testing/jest';
import { SbxEcho, SbxChild, SbxTransaction, SbxUncloneable } from '../../testing/src/sandbox/jobs.js';

// Sandboxed handlers (issue 32). The thread scenarios are shared with MongoStore
// (describeSandboxScenarios, packages/mongo-store/test/sandbox.test.ts); here the options, the
// in-line mode of the test kit, and a sandbox module that cannot give a thread its job.

describeSandboxScenarios('MemoryStore', () => ({ store: new MemoryStore() }));

describe('sandbox options', () => {
  it('refuses a sandboxed job without Loom.create({ sandbox }), naming the job and the option', async () => {
    const created = Loom.create({ store: new MemoryStore(), jobs: [SbxEcho, SbxChild] });
    await expect(created).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(created).rejects.toThrow(/sandbox.*"sbx-echo"/s);
  });

  it('refuses a relative module path and bad job options', async () => {
    await expect(Loom.create({ store: new MemoryStore(), jobs: [SbxChild], sandbox: { module: './container.js' } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    @Job({ name: 'bad-sandbox', sandbox: { threads: 0 } as never })
    class BadSandbox {
      async run(): Promise<void> {}
    }
    await expect(Loom.create({ store: new MemoryStore(), jobs: [BadSandbox], sandbox: 'inline' })).rejects.toMatchObject({ code: 'INVALID_JOB_OPTIONS' });
  });

  it('fails the run with SANDBOX_MODULE when the module does not load the job class', async () => {
    const t = await createTestLoom({
      jobs: [SbxEcho, SbxChild],
      sandbox: { module: new URL('../../testing/dist/sandbox/jobs.js', import.meta.url) },
      // A thread's start (loading the module) moves nothing the harness sees; on a loaded machine it takes seconds.
      realIoTimeout: '60s',
    });
    try {
      const { id } = await t.enqueue(SbxEcho, { n: 1 });
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('dead');
      expect(job?.errors[0]).toMatchObject({ code: 'SANDBOX_MODULE' });
      expect(job?.errors[0]?.message).toContain('no default export');
    } finally {
      await t.stop();
    }
  });
});

describe("the test kit's in-line sandbox", () => {
  it('runs sandboxed jobs on the engine thread by default, through the container, ctx and all', async () => {
    const t = await createTestLoom({ jobs: [SbxEcho, SbxChild] });
    try {
      const { id } = await t.enqueue(SbxEcho, { n: 21 });
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toMatchObject({ doubled: 42, patched: true, childResult: 43, threadId: 0 });
    } finally {
      await t.stop();
    }
  });

  it('keeps the rules of a thread: NOT_CLONEABLE results, no ctx.transaction, cloned payloads', async () => {
    let seen: unknown;
    const payload = { list: [1] };
    @Job({ name: 'inline-mutator', sandbox: true, retries: 0 })
    class InlineMutator {
      async run(p: { list: number[] }, ctx: JobContext): Promise<number> {
        p.list.push(2);
        seen = p;
        return (await ctx.step('s', () => p.list.length)) as number;
      }
    }
    const t = await createTestLoom({ jobs: [SbxUncloneable, SbxTransaction, InlineMutator], sandbox: 'inline' });
    try {
      const a = await t.enqueue(SbxUncloneable, {});
      const b = await t.enqueue(SbxTransaction, {});
      const c = await t.enqueue(InlineMutator, payload);
      await t.runUntilIdle();
      expect((await t.getJob(a.id))?.errors[0]).toMatchObject({ code: 'NOT_CLONEABLE' });
      expect((await t.getJob(b.id))?.errors[0]).toMatchObject({ code: 'SANDBOX_UNSUPPORTED' });
      expect((await t.getJob(c.id))?.result).toBe(2);
      expect((await t.getJob(c.id))?.payload).toEqual({ list: [1] });
      expect(seen).not.toBe(payload);
    } finally {
      await t.stop();
    }
  });
});
