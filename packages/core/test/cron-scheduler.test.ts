import { describe, expect, it } from '@jest/globals';
import { DateTime } from 'luxon';
import { LoomError } from '../src/support/errors.js';
import { MAX_CATCH_UP_SLOTS } from '../src/cron/slot-selection.js';
import type { MemoryStore } from '../src/store/memory-store/memory-store.js';
import type { JobStore } from '../src/store/store.js';
import { HOUR, MINUTE, ManualClock, cronInstances, settle } from './cron-harness.js';

const T0 = '2026-01-01T00:00:30Z';
const iso = (d: Date | undefined) => d?.toISOString();

// Nothing runs the enqueued jobs in these tests, so tests not about overlap use overlap: 'allow'
// (with the default 'skip', the still-queued previous run would hold back every later slot).
describe('Scheduler: exactly one job per fire time across instances', () => {
  it('four instances on one store, 1,000 ticks of * * * * *: one job per fire, none missing', async () => {
    const clock = new ManualClock(T0);
    const loom = cronInstances({ clock, instances: 4, schedules: { report: { cron: '* * * * *', overlap: 'allow' } } });
    await loom.tickAll();
    for (let i = 1; i <= 1000; i++) {
      // ticks land at varying offsets into the minute, like real timers on a busy event loop
      clock.set(new Date(Date.parse('2026-01-01T00:00:00Z') + i * MINUTE + ((i * 7919) % 50_000)));
      await loom.tickAll();
    }
    const jobs = await loom.jobs('report');
    expect(jobs).toHaveLength(1000);
    jobs.forEach((job, i) => {
      const fireAt = new Date(Date.parse('2026-01-01T00:01:00Z') + i * MINUTE);
      expect(job.scheduledFor).toEqual(fireAt);
      expect(job.runAt).toEqual(fireAt);
      expect(job.idempotencyKey).toBe(`cron:report:${fireAt.toISOString()}`);
    });
    expect(loom.events.filter((e) => e.event === 'schedule:fired')).toHaveLength(1000);
    expect(loom.logs.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('four instances whose clocks disagree by up to 30 s: still one job per fire, none missing', async () => {
    // started 31 s into the minute, so even the slowest clock first sees the schedule after 00:00
    const clock = new ManualClock('2026-01-01T00:00:31Z');
    const clocks = [-30_000, -4_000, 0, 29_000].map((skew) => clock.skewed(skew));
    const loom = cronInstances({ clock, clocks, schedules: { report: { cron: '*/5 * * * *', overlap: 'allow' } } });
    await loom.tickAll();
    for (let step = 1; step <= 3 * 60 * 6; step++) {
      clock.set(new Date(Date.parse('2026-01-01T00:00:31Z') + step * 10_000));
      // each instance ticks on its own schedule: one per step, in turn
      await loom.schedulers[step % 4].tick();
    }
    const jobs = await loom.jobs('report');
    expect(jobs.map((job) => iso(job.scheduledFor))).toEqual(
      Array.from({ length: 36 }, (_, i) => new Date(Date.parse('2026-01-01T00:05:00Z') + i * 5 * MINUTE).toISOString()),
    );
  });

  it('a clock moved backwards never fires a slot twice', async () => {
    const clock = new ManualClock('2026-01-01T10:00:00Z');
    const loom = cronInstances({ clock, instances: 2, schedules: { report: { cron: '* * * * *', catchUp: 'all', overlap: 'allow' } } });
    await loom.tickAll();
    clock.set('2026-01-01T10:05:10Z');
    await loom.tickAll();
    clock.set('2026-01-01T10:01:10Z'); // NTP step back four minutes
    await loom.tickAll();
    clock.set('2026-01-01T10:03:10Z');
    await loom.tickAll();
    clock.set('2026-01-01T10:06:00Z');
    await loom.tickAll();
    const jobs = await loom.jobs('report');
    expect(jobs.map((job) => iso(job.scheduledFor))).toEqual([
      '2026-01-01T10:01:00.000Z',
      '2026-01-01T10:02:00.000Z',
      '2026-01-01T10:03:00.000Z',
      '2026-01-01T10:04:00.000Z',
      '2026-01-01T10:05:00.000Z',
      '2026-01-01T10:06:00.000Z',
    ]);
    const [state] = await loom.store.listSchedules();
    expect(iso(state.lastFireAt ?? undefined)).toBe('2026-01-01T10:06:00.000Z');
  });

  it('a schedule seen for the first time does not run the slots before it existed', async () => {
    const clock = new ManualClock('2026-01-01T10:07:20Z');
    const loom = cronInstances({ clock, schedules: { report: { cron: '*/5 * * * *', catchUp: 'all' } } });
    await loom.tickAll();
    expect(await loom.jobs('report')).toEqual([]);
    clock.set('2026-01-01T10:10:00Z');
    await loom.tickAll();
    expect((await loom.jobs('report')).map((job) => iso(job.scheduledFor))).toEqual(['2026-01-01T10:10:00.000Z']);
  });

  it('never throws from a tick: a failing store is logged and the slot fires on the next tick', async () => {
    const clock = new ManualClock('2026-01-01T10:00:00Z');
    const loom = cronInstances({ clock, schedules: { report: '* * * * *' } });
    await loom.tickAll();
    const original = loom.store.advanceSchedule.bind(loom.store);
    loom.store.advanceSchedule = async () => {
      throw new Error('connection reset');
    };
    clock.set('2026-01-01T10:01:00Z');
    await expect(loom.schedulers[0].tick()).resolves.toBeUndefined();
    expect(loom.logs.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
      'schedule report (class reportJob): tick failed; retrying on the next tick',
    ]);
    loom.store.advanceSchedule = original;
    clock.set('2026-01-01T10:01:30Z');
    await loom.schedulers[0].tick();
    expect((await loom.jobs('report')).map((job) => iso(job.scheduledFor))).toEqual(['2026-01-01T10:01:00.000Z']);
  });
});

/** `store` as one instance sees it: `around(method, call)` runs in place of each method call. */
function intercept(store: MemoryStore, around: (method: string, call: () => Promise<unknown>) => Promise<unknown>): JobStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => around(String(prop), () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    },
  });
}

describe('Scheduler: one run per slot, also when runs die or instances crash', () => {
  it('a slower instance does not enqueue a slot again after its run died (a dead job frees its key)', async () => {
    const clock = new ManualClock('2026-01-01T09:59:30Z');
    let stall: Promise<void> | null = null;
    let resume = () => {};
    const loom = cronInstances({
      clock,
      instances: 2,
      schedules: { report: { cron: '0 * * * *', overlap: 'allow' } },
      // Instance 1 reads the schedule's state, then stalls (a GC pause, a slow network).
      wrap: (store, i) =>
        i === 0
          ? store
          : intercept(store, async (method, call) => {
              const result = await call();
              if (method === 'ensureSchedule' && stall) await stall;
              return result;
            }),
    });
    await loom.tickAll();
    clock.set('2026-01-01T10:00:00Z');
    stall = new Promise((resolve) => (resume = resolve));
    const slow = loom.schedulers[1].tick();
    await settle();
    await loom.schedulers[0].tick();
    const [run] = await loom.store.claim({
      owner: 'w',
      queues: ['default'],
      names: ['report'],
      limit: 1,
      leaseUntil: new Date('2026-01-01T10:05:00Z'),
      now: clock.now(),
    });
    expect(run.scheduledFor).toEqual(new Date('2026-01-01T10:00:00Z'));
    await loom.store.deadLetter({ jobId: run.id, token: run.lease!.token }, { reason: 'report failed', now: clock.now() });
    resume();
    await slow;
    // Enqueue-then-advance let the stalled instance enqueue 10:00 again: its key was free once the run died.
    expect(await loom.jobs('report')).toEqual([]);
    expect(loom.events.filter((e) => e.event === 'schedule:fired')).toHaveLength(1);
  });

  it('an instance that died between advancing and enqueueing: another enqueues the slot once it is clearly dead', async () => {
    const clock = new ManualClock('2026-01-01T09:59:30Z');
    let crashed = false;
    const loom = cronInstances({
      clock,
      instances: 2,
      schedules: { report: { cron: '0 * * * *', overlap: 'allow' } },
      wrap: (store, i) =>
        i === 0 ? intercept(store, (method, call) => (crashed ? new Promise(() => {}) : ((crashed = method === 'advanceSchedule'), call()))) : store,
    });
    await loom.tickAll();
    clock.set('2026-01-01T10:00:00Z');
    void loom.schedulers[0].tick(); // its advance lands; every later call of the dead process hangs
    await settle();
    expect((await loom.store.listSchedules())[0]).toMatchObject({ lastFireAt: new Date('2026-01-01T10:00:00Z'), firing: [new Date('2026-01-01T10:00:00Z')] });
    clock.set('2026-01-01T10:00:30Z');
    await loom.schedulers[1].tick();
    expect(await loom.jobs('report')).toEqual([]); // too soon to tell a dead instance from a busy one
    clock.set('2026-01-01T10:01:00Z');
    await loom.schedulers[1].tick();
    expect((await loom.jobs('report')).map((job) => iso(job.scheduledFor))).toEqual(['2026-01-01T10:00:00.000Z']);
    expect((await loom.store.listSchedules())[0].firing).toEqual([]);
    expect(loom.events.filter((e) => e.event === 'schedule:fired').map((e) => e.payload.fireAt)).toEqual([new Date('2026-01-01T10:00:00Z')]);
  });

  it("overlap 'skip' reads at most one job per check, however many jobs of that name are queued", async () => {
    const clock = new ManualClock('2026-01-01T09:59:30Z');
    const listed: number[] = [];
    const loom = cronInstances({
      clock,
      schedules: { report: '* * * * *' },
      wrap: (store) =>
        intercept(store, async (method, call) => {
          const result = await call();
          if (method === 'listJobs') listed.push((result as unknown[]).length);
          return result;
        }),
    });
    // A backlog of reports enqueued by hand (no scheduledFor): they never hold the schedule back.
    await loom.store.enqueue(
      Array.from({ length: 500 }, (_, i) => ({ name: 'report', queue: 'default', payload: { i }, priority: 0, runAt: clock.now(), maxAttempts: 1 })),
      { now: clock.now() },
    );
    await loom.tickAll();
    for (const minute of ['10:00', '10:01', '10:02']) {
      clock.set(`2026-01-01T${minute}:00Z`);
      await loom.tickAll();
    }
    expect((await loom.jobs('report')).filter((job) => job.scheduledFor).map((job) => iso(job.scheduledFor))).toEqual(['2026-01-01T10:00:00.000Z']);
    expect(loom.events.filter((e) => e.event === 'schedule:skipped')).toHaveLength(2);
    expect(listed).toEqual([0, 1, 1]);
  });
});

describe('Scheduler: three hours of downtime', () => {
  async function downtime(catchUp: 'latest' | 'all' | 'none', cron = '*/5 * * * *', wakeAt = '2026-01-01T13:00:20Z', overlap: 'skip' | 'allow' = 'skip') {
    const clock = new ManualClock('2026-01-01T09:59:00Z');
    const loom = cronInstances({ clock, instances: 2, schedules: { report: { cron, catchUp, overlap } } });
    await loom.tickAll();
    clock.set('2026-01-01T10:00:00Z');
    await loom.tickAll(); // the last run before every instance goes down; it finishes
    const [last] = await loom.store.claim({
      owner: 'w',
      queues: ['default'],
      names: ['report'],
      limit: 1,
      leaseUntil: new Date('2026-01-01T10:01:00Z'),
      now: clock.now(),
    });
    await loom.store.complete({ jobId: last.id, token: last.lease!.token }, { now: clock.now() });
    clock.set(wakeAt);
    await loom.tickAll();
    return { loom, fired: (await loom.jobs('report')).map((job) => iso(job.scheduledFor)) };
  }

  it("'latest' runs once, for the newest missed slot", async () => {
    const { loom, fired } = await downtime('latest');
    expect(fired).toEqual(['2026-01-01T10:00:00.000Z', '2026-01-01T13:00:00.000Z']);
    expect(loom.events.filter((e) => e.event === 'schedule:missed')).toEqual([
      {
        event: 'schedule:missed',
        payload: { name: 'report', after: new Date('2026-01-01T10:00:00Z'), upTo: new Date('2026-01-01T12:55:00Z'), reason: 'catch-up-latest' },
      },
    ]);
  });

  it("'all' with overlap 'allow' enqueues every missed slot at once", async () => {
    const { fired } = await downtime('all', '*/5 * * * *', '2026-01-01T13:00:20Z', 'allow');
    expect(fired).toHaveLength(1 + 36);
    expect(fired[1]).toBe('2026-01-01T10:05:00.000Z');
    expect(fired.at(-1)).toBe('2026-01-01T13:00:00.000Z');
  });

  it(`'all' is bounded: the newest ${MAX_CATCH_UP_SLOTS} slots, with a warning and an event for the rest`, async () => {
    const { loom, fired } = await downtime('all', '* * * * *', '2026-01-01T13:00:20Z', 'allow');
    expect(fired).toHaveLength(1 + MAX_CATCH_UP_SLOTS);
    expect(fired[1]).toBe('2026-01-01T11:21:00.000Z');
    expect(loom.events.filter((e) => e.event === 'schedule:missed').map((e) => e.payload.reason)).toEqual(['catch-up-all-limit']);
    expect(loom.logs.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'schedule report: did not run the slots after 2026-01-01T10:00:00.000Z up to 2026-01-01T11:20:00.000Z (catch-up-all-limit)',
    ]);
  });

  it("'all' with overlap 'skip' runs every missed slot one at a time, oldest first", async () => {
    const { loom } = await downtime('all', '*/30 * * * *', '2026-01-01T13:00:20Z');
    const order: string[] = [];
    for (let round = 0; round < 10; round++) {
      const unfinished = await loom.store.listJobs({ name: 'report', status: ['queued', 'running', 'waiting'] });
      expect(unfinished.length).toBeLessThanOrEqual(1);
      const [job] = await loom.store.claim({
        owner: 'w',
        queues: ['default'],
        names: ['report'],
        limit: 1,
        leaseUntil: new Date('2026-01-01T14:00:00Z'),
        now: new Date('2026-01-01T13:00:20Z'),
      });
      if (!job) break;
      await loom.tickAll(); // the run is in progress: nothing new
      expect(await loom.store.listJobs({ name: 'report', status: ['queued'] })).toEqual([]);
      await loom.store.complete({ jobId: job.id, token: job.lease!.token }, { now: new Date('2026-01-01T13:00:20Z') });
      order.push(iso(job.scheduledFor)!);
      await loom.tickAll();
    }
    expect(order).toEqual(['10:30', '11:00', '11:30', '12:00', '12:30', '13:00'].map((hm) => `2026-01-01T${hm}:00.000Z`));
    expect(loom.events.filter((e) => e.event === 'schedule:skipped')).toEqual([]);
  });

  it("'none' runs nothing missed, then fires on time again", async () => {
    const { loom, fired } = await downtime('none', '*/5 * * * *', '2026-01-01T13:02:00Z');
    expect(fired).toEqual(['2026-01-01T10:00:00.000Z']);
    expect(loom.events.filter((e) => e.event === 'schedule:missed').map((e) => e.payload.upTo)).toEqual([new Date('2026-01-01T13:00:00Z')]);
  });

  it("'none' still runs a slot the scheduler woke less than a minute after", async () => {
    const { fired } = await downtime('none', '*/5 * * * *', '2026-01-01T13:00:20Z');
    expect(fired).toEqual(['2026-01-01T10:00:00.000Z', '2026-01-01T13:00:00.000Z']);
  });
});

describe("Scheduler: overlap 'skip'", () => {
  async function withLongRun(overlap: 'skip' | 'allow') {
    const clock = new ManualClock('2026-01-01T09:59:30Z');
    const loom = cronInstances({ clock, instances: 2, schedules: { report: { cron: '* * * * *', overlap } } });
    await loom.tickAll();
    clock.set('2026-01-01T10:00:00Z');
    await loom.tickAll();
    const [running] = await loom.store.claim({
      owner: 'worker-1',
      queues: ['default'],
      names: ['report'],
      limit: 1,
      leaseUntil: new Date('2026-01-01T11:00:00Z'),
      now: clock.now(),
    });
    for (const minute of ['10:01', '10:02']) {
      clock.set(`2026-01-01T${minute}:00Z`);
      await loom.tickAll();
    }
    return { loom, clock, running };
  }

  it('skips slots while the previous run is still running, with an event and a log line, and still advances', async () => {
    const { loom, clock, running } = await withLongRun('skip');
    expect((await loom.jobs('report')).map((job) => iso(job.scheduledFor))).toEqual(['2026-01-01T10:00:00.000Z']);
    expect(loom.events.filter((e) => e.event === 'schedule:skipped')).toEqual([
      { event: 'schedule:skipped', payload: { name: 'report', fireAt: new Date('2026-01-01T10:01:00Z'), reason: 'overlap', runningJobId: running.id } },
      { event: 'schedule:skipped', payload: { name: 'report', fireAt: new Date('2026-01-01T10:02:00Z'), reason: 'overlap', runningJobId: running.id } },
    ]);
    expect(loom.logs.filter((l) => l.level === 'warn')[0].msg).toBe(
      `schedule report: skipped the run for 2026-01-01T10:01:00.000Z because job ${running.id} (for 2026-01-01T10:00:00.000Z) is still running (overlap: 'skip'; use overlap: 'allow' to run anyway)`,
    );
    expect((await loom.store.listSchedules())[0].lastFireAt).toEqual(new Date('2026-01-01T10:02:00Z'));

    await loom.store.complete({ jobId: running.id, token: running.lease!.token }, { now: clock.now() });
    clock.set('2026-01-01T10:03:00Z');
    await loom.tickAll();
    expect((await loom.jobs('report')).map((job) => iso(job.scheduledFor))).toEqual(['2026-01-01T10:00:00.000Z', '2026-01-01T10:03:00.000Z']);
  });

  it('also skips while an earlier slot is still queued (a backlog does not pile up)', async () => {
    const clock = new ManualClock('2026-01-01T09:59:30Z');
    const loom = cronInstances({ clock, schedules: { report: '* * * * *' } });
    await loom.tickAll();
    for (const minute of ['10:00', '10:01', '10:02']) {
      clock.set(`2026-01-01T${minute}:00Z`);
      await loom.tickAll();
    }
    expect((await loom.jobs('report')).map((job) => iso(job.scheduledFor))).toEqual(['2026-01-01T10:00:00.000Z']);
    expect(loom.events.filter((e) => e.event === 'schedule:skipped')).toHaveLength(2);
  });

  it("overlap 'allow' fires while the previous run is still running", async () => {
    const { loom } = await withLongRun('allow');
    expect((await loom.jobs('report')).map((job) => iso(job.scheduledFor))).toEqual([
      '2026-01-01T10:00:00.000Z',
      '2026-01-01T10:01:00.000Z',
      '2026-01-01T10:02:00.000Z',
    ]);
    expect(loom.events.filter((e) => e.event === 'schedule:skipped')).toEqual([]);
  });
});

describe('ScheduleControl: pause, resume, list', () => {
  it('a paused schedule does not fire on any instance; resuming does not backfill', async () => {
    const clock = new ManualClock('2026-01-01T09:59:30Z');
    const loom = cronInstances({ clock, instances: 2, schedules: { report: { cron: '*/5 * * * *', catchUp: 'all' }, cleanup: '0 * * * *' } });
    await loom.tickAll();
    await loom.controls[0].pause('report');
    expect(await loom.controls[1].list()).toEqual([
      { name: 'cleanup', cron: '0 * * * *', timezone: 'UTC', paused: false, lastFireAt: null, nextFireAt: new Date('2026-01-01T10:00:00Z') },
      { name: 'report', cron: '*/5 * * * *', timezone: 'UTC', paused: true, lastFireAt: null, nextFireAt: null },
    ]);
    for (let i = 1; i <= 4; i++) {
      await clock.advance(5 * MINUTE);
      await loom.tickAll();
    }
    expect(await loom.jobs('report')).toEqual([]);
    expect(await loom.jobs('cleanup')).toHaveLength(1);

    await loom.controls[1].resume('report');
    await loom.tickAll();
    expect(await loom.jobs('report')).toEqual([]);
    const [, report] = await loom.controls[0].list();
    expect(report).toEqual({
      name: 'report',
      cron: '*/5 * * * *',
      timezone: 'UTC',
      paused: false,
      lastFireAt: new Date('2026-01-01T10:15:00Z'),
      nextFireAt: new Date('2026-01-01T10:20:00Z'),
    });
    await clock.advance(MINUTE);
    await loom.tickAll();
    expect((await loom.jobs('report')).map((job) => iso(job.scheduledFor))).toEqual(['2026-01-01T10:20:00.000Z']);
  });

  it('refuses an unknown schedule name, listing the known ones', async () => {
    const loom = cronInstances({ clock: new ManualClock(T0), schedules: { report: '* * * * *' } });
    const error = await loom.controls[0].pause('reprot').catch((e: unknown) => e);
    expect(LoomError.is(error, 'SCHEDULE_NOT_FOUND')).toBe(true);
    expect((error as Error).message).toMatch(/"reprot".*known schedules: report/);
  });
});

describe('Scheduler: timers', () => {
  it('start arms a timer for the next fire time; the job is enqueued at that instant; stop cancels', async () => {
    const clock = new ManualClock('2026-01-01T10:00:30Z');
    const loom = cronInstances({ clock, schedules: { report: { cron: '*/5 * * * *', overlap: 'allow' } } });
    await loom.schedulers[0].start();
    await clock.advance(4 * MINUTE + 29_999);
    expect(await loom.jobs('report')).toEqual([]);
    await clock.advance(1);
    await settle();
    const [job] = await loom.jobs('report');
    expect(job).toMatchObject({ scheduledFor: new Date('2026-01-01T10:05:00Z'), createdAt: new Date('2026-01-01T10:05:00Z') });
    await clock.advance(HOUR);
    expect(await loom.jobs('report')).toHaveLength(13);
    await loom.schedulers[0].stop();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(HOUR);
    expect(await loom.jobs('report')).toHaveLength(13);
  });

  it('wakes at least once a minute when the next fire is far away, to see pauses and resumes', async () => {
    const clock = new ManualClock('2026-01-01T10:00:00Z');
    const loom = cronInstances({ clock, schedules: { nightly: '0 3 * * *' } });
    await loom.schedulers[0].start();
    let ticks = 0;
    const original = loom.store.ensureSchedule.bind(loom.store);
    loom.store.ensureSchedule = (name, now) => {
      ticks++;
      return original(name, now);
    };
    await clock.advance(10 * MINUTE);
    expect(ticks).toBe(10);
    await loom.schedulers[0].stop();
  });
});

/** A daily 02:30 job, four instances ticking every 20 minutes through each 2026 DST transition. */
describe('Scheduler: DST, daily 30 2 * * * across instances', () => {
  const transitions: Array<[zone: string, day: string]> = [
    ['Europe/Berlin', '2026-03-29'],
    ['Europe/Berlin', '2026-10-25'],
    ['America/New_York', '2026-03-08'],
    ['America/New_York', '2026-11-01'],
    ['Australia/Sydney', '2026-10-04'],
    ['Australia/Sydney', '2026-04-05'],
    ['Asia/Kolkata', '2026-03-29'],
    ['America/Santiago', '2026-09-06'],
    ['America/Santiago', '2026-04-05'],
  ];

  it.each(transitions)('%s around %s: exactly one run per local day', async (zone, day) => {
    const start = DateTime.fromISO(`${day}T12:00`, { zone }).minus({ days: 2 });
    const clock = new ManualClock(start.toJSDate());
    const loom = cronInstances({ clock, instances: 4, schedules: { nightly: { cron: '30 2 * * *', timezone: zone, overlap: 'allow' } } });
    await loom.tickAll();
    for (let step = 1; step <= 4 * 24 * 3; step++) {
      clock.set(start.plus({ minutes: step * 20 }).toJSDate());
      await loom.tickAll();
    }
    const localDays = (await loom.jobs('nightly')).map((job) => DateTime.fromJSDate(job.scheduledFor!, { zone }).toFormat('yyyy-MM-dd HH:mm'));
    const days = [-1, 0, 1, 2].map((offset) => DateTime.fromISO(day, { zone }).plus({ days: offset }).toFormat('yyyy-MM-dd'));
    expect(localDays.map((local) => local.slice(0, 10))).toEqual(days);
    // The transition day's run is 02:30, or 03:00 where 02:30 did not exist (Berlin, New York and
    // Sydney in spring).
    expect(localDays.every((local) => local.endsWith('02:30') || local.endsWith('03:00'))).toBe(true);
  });
});
