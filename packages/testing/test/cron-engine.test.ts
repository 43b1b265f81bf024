import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { Job, LoomError, MemoryStore, type JobContext } from '@loom/core';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';

const runs: Array<{ job: string; scheduledFor?: string; ranAt: string; payload: unknown }> = [];
let clockRef: FakeClock | undefined;

@Job({ schedule: '*/5 * * * *' })
class Heartbeat {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    runs.push({ job: ctx.name, scheduledFor: ctx.scheduledFor?.toISOString(), ranAt: clockRef!.now().toISOString(), payload: _ });
  }
}

@Job({
  name: 'nightly-report',
  payload: z.object({ kind: z.enum(['daily', 'weekly']) }),
  schedule: { cron: '30 2 * * *', timezone: 'Europe/Berlin', payload: { kind: 'daily' } },
})
class NightlyReport {
  async run(payload: { kind: string }, ctx: JobContext): Promise<void> {
    runs.push({ job: ctx.name, scheduledFor: ctx.scheduledFor?.toISOString(), ranAt: clockRef!.now().toISOString(), payload });
  }
}

let storeRef: MemoryStore | undefined;
/** The most unfinished backfill runs (queued or running, this one included) any run saw. */
let maxUnfinishedBackfills = 0;
@Job({ name: 'backfill', concurrency: 4, schedule: { cron: '*/30 * * * *', catchUp: 'all' } })
class Backfill {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    const unfinished = await storeRef!.listJobs({ name: 'backfill', status: ['queued', 'running', 'waiting'] });
    maxUnfinishedBackfills = Math.max(maxUnfinishedBackfills, unfinished.length);
    runs.push({ job: ctx.name, scheduledFor: ctx.scheduledFor?.toISOString(), ranAt: clockRef!.now().toISOString(), payload: _ });
  }
}

const open: TestLoom[] = [];
async function testLoom(options: Parameters<typeof createTestLoom>[0]): Promise<TestLoom> {
  const t = await createTestLoom(options);
  open.push(t);
  return t;
}

afterEach(async () => {
  for (const t of open.splice(0)) await t.stop();
  runs.length = 0;
});

const fiveMinuteSlots = (count: number) => Array.from({ length: count }, (_, i) => new Date(Date.parse('2026-01-01T00:05:00Z') + i * 300_000).toISOString());

describe('cron through the engine', () => {
  it('a @Job({ schedule }) runs once per fire time, on time, with ctx.scheduledFor = the fire time', async () => {
    clockRef = new FakeClock('2026-01-01T00:00:00Z');
    const t = await testLoom({ jobs: [Heartbeat], clock: clockRef });
    const fired: unknown[] = [];
    t.loom.on('schedule:fired', (event) => fired.push(event.fireAt.toISOString()));
    await t.advance('1h');
    expect(runs.map((run) => run.scheduledFor)).toEqual(fiveMinuteSlots(12));
    expect(runs.every((run) => run.ranAt === run.scheduledFor)).toBe(true);
    expect(fired).toEqual(fiveMinuteSlots(12));
    const [job] = await t.store.listJobs({ name: 'Heartbeat', status: ['completed'], limit: 1 });
    expect(job.idempotencyKey).toBe(`cron:Heartbeat:${job.scheduledFor!.toISOString()}`);
  });

  it('two engines on one store and clock run each fire time once', async () => {
    clockRef = new FakeClock('2026-01-01T00:00:00Z');
    const store = new MemoryStore();
    const a = await testLoom({ jobs: [Heartbeat], clock: clockRef, store });
    const b = await testLoom({ jobs: [Heartbeat], clock: clockRef, store });
    for (let i = 0; i < 6; i++) {
      await a.advance('5m');
      await b.settle();
    }
    expect(runs.map((run) => run.scheduledFor)).toEqual(fiveMinuteSlots(6));
  });

  it("after downtime, catchUp 'all' runs every missed slot one at a time once an engine is back", async () => {
    clockRef = new FakeClock('2026-01-01T00:00:00Z');
    const store = (storeRef = new MemoryStore());
    const before = await createTestLoom({ jobs: [Backfill], clock: clockRef, store });
    await before.advance('30m');
    await before.stop(); // every engine down for three hours
    clockRef.set('2026-01-01T03:10:00Z');
    const after = await testLoom({ jobs: [Backfill], clock: clockRef, store });
    await after.runUntilIdle();
    expect(runs.map((run) => run.scheduledFor)).toEqual(['00:30', '01:00', '01:30', '02:00', '02:30', '03:00'].map((hm) => `2026-01-01T${hm}:00.000Z`));
    expect(maxUnfinishedBackfills).toBe(1);
  });

  it('gives the schedule payload to each run and lists, pauses and resumes schedules', async () => {
    clockRef = new FakeClock('2026-03-28T12:00:00Z');
    const t = await testLoom({ jobs: [NightlyReport, Heartbeat], clock: clockRef });
    expect(await t.loom.schedules.list()).toEqual([
      { name: 'Heartbeat', cron: '*/5 * * * *', timezone: 'UTC', paused: false, lastFireAt: null, nextFireAt: new Date('2026-03-28T12:05:00Z') },
      { name: 'nightly-report', cron: '30 2 * * *', timezone: 'Europe/Berlin', paused: false, lastFireAt: null, nextFireAt: new Date('2026-03-29T01:00:00Z') },
    ]);
    await t.loom.schedules.pause('Heartbeat');
    await t.advance('1d');
    // 2026-03-29 is the spring-forward day in Berlin: 02:30 does not exist, the run is at 03:00 CEST.
    expect(runs).toEqual([{ job: 'nightly-report', scheduledFor: '2026-03-29T01:00:00.000Z', ranAt: '2026-03-29T01:00:00.000Z', payload: { kind: 'daily' } }]);
    await t.loom.schedules.resume('Heartbeat');
    await t.advance('5m');
    expect(runs.filter((run) => run.job === 'Heartbeat').map((run) => run.scheduledFor)).toEqual(['2026-03-29T12:05:00.000Z']);
  });

  it.each([
    [{ cron: '61 * * * *' }, 'schedule.cron'],
    [{ cron: '0 3 * * *', timezone: 'Europe/Berlinn' }, 'schedule.timezone'],
    [{ cron: '0 3 * * *', catchUp: 'sometimes' }, 'schedule.catchUp'],
  ])('Loom.create refuses a bad schedule %j naming the class and the field', async (schedule, option) => {
    @Job({ schedule: schedule as never })
    class BadSchedule {
      async run(): Promise<void> {}
    }
    const error = await createTestLoom({ jobs: [BadSchedule] }).catch((e: unknown) => e);
    expect(LoomError.is(error, 'INVALID_JOB_OPTIONS')).toBe(true);
    expect((error as Error).message).toContain(`@Job on class BadSchedule: option "${option}"`);
  });

  it('Loom.create refuses a schedule payload the job would refuse', async () => {
    @Job({ payload: z.object({ kind: z.enum(['daily']) }), schedule: { cron: '0 3 * * *', payload: { kind: 'hourly' } } })
    class BadPayload {
      async run(): Promise<void> {}
    }
    const error = await createTestLoom({ jobs: [BadPayload] }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /@Job on class BadPayload: option "schedule.payload" is not a valid payload for this job: Invalid payload for job "BadPayload" at kind/,
    );
  });
});
