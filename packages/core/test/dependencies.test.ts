import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Job, LoomError, MemoryStore, type JobContext } from '@loom/core';
import { createTestLoom, type TestLoom } from '@loom/testing';

/** The order jobs ran in, and what BuildReport read. */
let ran: string[] = [];
let seen: Record<string, unknown> | undefined;
let failPrices = false;

@Job({ name: 'dep-prices', retries: 0 })
class FetchPrices {
  async run(payload: { day: string }) {
    ran.push('prices');
    if (failPrices) throw new Error('prices down');
    return { prices: payload.day };
  }
}

@Job({ name: 'dep-rates' })
class FetchRates {
  async run() {
    ran.push('rates');
    return 1.1;
  }
}

@Job({ name: 'dep-report' })
class BuildReport {
  async run(_: { day: string }, ctx: JobContext) {
    ran.push('report');
    seen = await ctx.dependencyResults();
    return 'report';
  }
}

@Job({ name: 'dep-fan-out' })
class FanOut {
  async run(_: undefined, ctx: JobContext) {
    const a = await ctx.enqueue(FetchRates, undefined);
    const b = await ctx.enqueue(BuildReport, { day: 'child' }, { dependsOn: [a.id] });
    return b.id;
  }
}

/** Enqueues a child, then waits for a signal that never comes (it stays waiting). */
@Job({ name: 'dep-waiting-parent' })
class WaitingParent {
  async run(_: undefined, ctx: JobContext) {
    await ctx.enqueue(FetchRates, undefined, { delay: '1h' });
    await ctx.waitForSignal('never');
  }
}

const jobs = [FetchPrices, FetchRates, BuildReport, FanOut, WaitingParent];

let t: TestLoom | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
  ran = [];
  seen = undefined;
  failPrices = false;
});

describe('job dependencies through the engine', () => {
  it('runs a job after every dependency completed, with their results in ctx.dependencyResults()', async () => {
    t = await createTestLoom({ jobs, start: false });
    const a = await t.enqueue(FetchPrices, { day: 'mon' });
    const b = await t.enqueue(FetchRates, undefined, { delay: '1m' });
    const report = await t.enqueue(BuildReport, { day: 'mon' }, { dependsOn: [a.id, b.id] });
    expect(await t.jobs.get(report.id)).toMatchObject({ status: 'waiting', waitingFor: { dependencies: [a.id, b.id] }, dependsOn: [a.id, b.id] });
    await t.loom.start();
    await t.runUntilIdle();
    expect(ran).toEqual(['prices']);
    expect((await t.getJob(report.id))?.waitingFor).toEqual({ dependencies: [b.id] });
    await t.advance('1m');
    expect(ran).toEqual(['prices', 'rates', 'report']);
    expect(seen).toEqual({ [a.id]: { prices: 'mon' }, [b.id]: 1.1 });
    expect((await t.getJob(a.id))?.dependents).toEqual([report.id]);
  });

  it("dead-letters a dependent with DEPENDENCY_FAILED by default when a dependency dies; 'run' runs it anyway", async () => {
    t = await createTestLoom({ jobs });
    failPrices = true;
    const a = await t.enqueue(FetchPrices, { day: 'mon' }, { delay: '1s' });
    const failed = await t.enqueue(BuildReport, { day: 'mon' }, { dependsOn: [a.id] });
    const runs = await t.enqueue(BuildReport, { day: 'tue' }, { dependsOn: [a.id], onDependencyFailure: 'run' });
    await t.advance('1s');
    const dead = await t.getJob(failed.id);
    expect(dead?.status).toBe('dead');
    expect(dead?.errors.at(-1)?.code).toBe('DEPENDENCY_FAILED');
    expect((await t.getJob(runs.id))?.status).toBe('completed');
    expect(seen).toEqual({});
  });

  it('refuses an unknown dependency id or a bad policy and stores nothing', async () => {
    t = await createTestLoom({ jobs });
    await expect(t.enqueue(BuildReport, { day: 'x' }, { dependsOn: ['nope'] })).rejects.toMatchObject({ code: 'INVALID_DEPENDENCIES' });
    // @ts-expect-error -- not a policy
    await expect(t.enqueue(BuildReport, { day: 'x' }, { dependsOn: [], onDependencyFailure: 'ignore' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await t.jobs.list()).jobs).toEqual([]);
  });

  it('takes dependsOn from ctx.enqueue', async () => {
    t = await createTestLoom({ jobs });
    const parent = await t.enqueue(FanOut, undefined);
    await t.runUntilIdle();
    const child = (await t.getJob(parent.id))?.result as string;
    expect((await t.getJob(child))?.status).toBe('completed');
    expect(ran).toEqual(['rates', 'report']);
  });
});

describe('loom.flows.add', () => {
  it('enqueues a DAG in one call, ids by node name, and runs it in dependency order', async () => {
    t = await createTestLoom({ jobs });
    const flow = await t.flows.add({
      nodes: {
        report: { job: BuildReport, payload: { day: 'mon' }, dependsOn: ['prices', 'rates'] },
        prices: { job: FetchPrices, payload: { day: 'mon' } },
        rates: { job: FetchRates, dependsOn: ['prices'] },
      },
    });
    expect(Object.keys(flow.ids).sort()).toEqual(['prices', 'rates', 'report']);
    await t.runUntilIdle();
    expect(ran).toEqual(['prices', 'rates', 'report']);
    expect(seen).toEqual({ [flow.ids.prices!]: { prices: 'mon' }, [flow.ids.rates!]: 1.1 });
  });

  it('refuses a cycle or an unknown node with INVALID_DEPENDENCIES, naming it, and stores nothing', async () => {
    t = await createTestLoom({ jobs, store: new MemoryStore() });
    const cycle = await t.flows
      .add({
        nodes: {
          a: { job: FetchRates, dependsOn: ['c'] },
          b: { job: FetchRates, dependsOn: ['a'] },
          c: { job: FetchRates, dependsOn: ['b'] },
        },
      })
      .catch((e: unknown) => e);
    expect(LoomError.is(cycle, 'INVALID_DEPENDENCIES')).toBe(true);
    expect((cycle as Error).message).toContain('a -> c -> b -> a');
    await expect(t.flows.add({ nodes: { a: { job: FetchRates }, b: { job: FetchRates, dependsOn: ['x'] } } })).rejects.toMatchObject({
      code: 'INVALID_DEPENDENCIES',
    });
    expect((await t.jobs.list()).jobs).toEqual([]);
  });
});

describe('jobs.cancel(id, { children: true })', () => {
  it('cancels the children and the dependents, recursively; without it they stay', async () => {
    t = await createTestLoom({ jobs });
    const parent = await t.enqueue(WaitingParent, undefined);
    await t.runUntilIdle();
    const [child] = (await t.jobs.list({ name: 'dep-rates' })).jobs;
    const report = await t.enqueue(BuildReport, { day: 'x' }, { dependsOn: [parent.id] });
    const mail = await t.enqueue(BuildReport, { day: 'y' }, { dependsOn: [report.id] });
    const other = await t.enqueue(FetchRates, undefined, { delay: '1h' });

    const plain = await t.enqueue(WaitingParent, undefined);
    await t.runUntilIdle();
    const dependent = await t.enqueue(BuildReport, { day: 'z' }, { dependsOn: [plain.id] });
    expect(await t.jobs.cancel(plain.id)).toEqual({ cancelled: true, status: 'cancelled' });
    await t.runUntilIdle();
    expect((await t.getJob(dependent.id))?.status).toBe('dead');

    expect(await t.jobs.cancel(parent.id, { children: true })).toEqual({ cancelled: true, status: 'cancelled', cascaded: 3 });
    await t.runUntilIdle();
    for (const id of [parent.id, child!.id, report.id, mail.id]) expect((await t.getJob(id))?.status).toBe('cancelled');
    expect((await t.getJob(other.id))?.status).toBe('queued');
  });
});
