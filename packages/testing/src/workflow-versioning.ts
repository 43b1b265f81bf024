/// <reference types="jest" />
import 'reflect-metadata';
import { Job, type JobContext, type JobStore } from '@loom/core';
import { FakeClock } from './fake-clock.js';
import { createTestLoom } from './test-loom.js';

/**
 * A workflow changed while runs are in flight, on any store (`ctx.patched`): v1 runs a, sleeps,
 * runs b, sleeps again, runs c; v2 adds a step `extra` after b behind `ctx.patched('extra')`. Runs
 * that reach that point first under v2 take it; a run that had already passed it under v1 (it
 * recorded the second sleep) does not, and replays on without NON_DETERMINISM.
 */
export function describeWorkflowVersioning(label: string, fixture: () => { store: JobStore } | Promise<{ store: JobStore }>): void {
  let version: 1 | 2 = 1;
  const did: Record<string, string[]> = {};

  @Job({ name: 'wf-versioned' })
  class Versioned {
    async run(payload: { id: string }, ctx: JobContext): Promise<string[]> {
      const log = (did[payload.id] ??= []);
      await ctx.step('a', () => void log.push('a'));
      await ctx.sleep('first-nap', '1h');
      await ctx.step('b', () => void log.push('b'));
      if (version === 2 && (await ctx.patched('extra'))) await ctx.step('extra', () => void log.push('extra'));
      await ctx.sleep('second-nap', '1h');
      await ctx.step('c', () => void log.push('c'));
      return log;
    }
  }

  describe(`ctx.patched on ${label}`, () => {
    it('runs that reach the change first take it, runs that had passed it do not, and each keeps its answer', async () => {
      version = 1;
      for (const key of Object.keys(did)) delete did[key];
      const { store } = await fixture();
      const t = await createTestLoom({ jobs: [Versioned], store, clock: new FakeClock(), lease: '30s', pollInterval: '1h' });
      try {
        const early = await t.enqueue(Versioned, { id: 'early' }); // past b when v2 deploys
        await t.runUntilIdle();
        await t.advance('1h');
        const late = await t.enqueue(Versioned, { id: 'late' }); // in its first nap when v2 deploys
        await t.runUntilIdle();
        expect(did).toEqual({ early: ['a', 'b'], late: ['a'] });

        version = 2; // deploy
        const fresh = await t.enqueue(Versioned, { id: 'fresh' });
        await t.advance('3h');

        for (const { id } of [early, late, fresh]) expect((await t.getJob(id))?.status).toBe('completed');
        expect(did).toEqual({ early: ['a', 'b', 'c'], late: ['a', 'b', 'extra', 'c'], fresh: ['a', 'b', 'extra', 'c'] });
        const marker = async (id: string) => (await t.getJob(id))?.steps.find((s) => s.name === 'patched:extra');
        expect(await marker(early.id)).toMatchObject({ status: 'completed', result: false });
        expect(await marker(late.id)).toMatchObject({ status: 'completed', result: true });
        // The marker takes no position: the steps after it keep the numbers they had without it.
        expect((await marker(fresh.id))?.seq).toBeUndefined();
      } finally {
        await t.stop();
        await store.close();
      }
    });
  });
}
