import {
  FINISHED_STATUSES,
  MemoryStore,
  toMs,
  RUN_RECORD_FORMAT,
  RUN_RECORD_VERSION,
  RunRecordMismatchError,
  importSteps,
  readJobOptions,
  type JobClass,
  type LoomOptions,
  type RunRecord,
} from '@loom/core';
import { FakeClock } from './fake-clock.js';
import { createTestLoom } from './test-loom.js';

/** A replay stops after this many sleeps, backoffs and timeouts, whatever the horizon. */
const MAX_REPLAY_ROUNDS = 10_000;

/** Options of {@link replayRun}. */
export interface ReplayRunOptions {
  /** How to build the job class: an inversify container (or give `resolve`). @default a new Container */
  container?: LoomOptions['container'];
  resolve?: LoomOptions['resolve'];
  /** Steps to run for real; every other recorded step answers from the record. */
  rerunSteps?: readonly string[];
  /** How far the fake clock may move for sleeps and timeouts before the replay stops. @default '3650d' */
  horizon?: string;
}

/** What {@link replayRun} saw. */
export interface ReplayResult {
  /** The replayed job's status at the end: `completed`, `dead`, or `waiting`/`queued` when it waits beyond the horizon. */
  status: string;
  result?: unknown;
  /** The last error of the replay, if any attempt failed. */
  error?: { name: string; message: string; code?: string };
  /** The steps that ran during the replay (in the order recorded), not answered from the record. */
  stepsRun: string[];
}

/**
 * Replays a production run (`loom jobs export ID > run.json`) against `job` in memory, under a
 * FakeClock starting at the run's creation: steps answer from the record unless named in
 * `rerunSteps`, recorded sleeps and waits keep their wake times, pending signals are delivered.
 * A record of another job (its name differs from the class's) or of an unknown format throws
 * `RunRecordMismatchError` (`RUN_RECORD_MISMATCH`) before anything runs.
 *
 * ```ts
 * const result = await replayRun(FulfillOrder, JSON.parse(fs.readFileSync('run.json', 'utf8')), { rerunSteps: ['ship'] });
 * expect(result).toMatchObject({ status: 'completed', stepsRun: ['ship'] });
 * ```
 */
export async function replayRun(job: JobClass, record: RunRecord, options: ReplayRunOptions = {}): Promise<ReplayResult> {
  const name = readJobOptions(job)?.name ?? job.name;
  if (typeof record !== 'object' || record === null || record.format !== RUN_RECORD_FORMAT) {
    throw new RunRecordMismatchError(`a ${RUN_RECORD_FORMAT} record`, 'not a run record (written by `loom jobs export`)');
  }
  if (typeof record.version !== 'number' || record.version > RUN_RECORD_VERSION) {
    throw new RunRecordMismatchError(`a record of version ${RUN_RECORD_VERSION} or older`, `of version ${String(record.version)}`);
  }
  if (record.job?.name !== name) throw new RunRecordMismatchError(`a run of "${name}"`, `a run of "${String(record.job?.name)}"`);
  const rerun = new Set(options.rerunSteps ?? []);
  const kept = importSteps(record).filter((s) => s.status === 'completed' && !rerun.has(s.name));
  const store = new MemoryStore();
  const clock = new FakeClock(new Date(record.job.createdAt));
  const t = await createTestLoom({
    jobs: [job],
    store,
    clock,
    pollInterval: '1h',
    ...(options.container ? { container: options.container } : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  try {
    const [enqueued] = await store.enqueue(
      [{ name, queue: record.job.queue, payload: record.payload, priority: 0, runAt: clock.now(), maxAttempts: record.job.maxAttempts, steps: kept }],
      { now: clock.now() },
    );
    const id = enqueued!.id;
    for (const signal of record.signals)
      await store.signal(id, { name: signal.name, data: signal.data, now: clock.now(), ...(signal.id ? { id: signal.id } : {}) });
    const horizon = clock.now().getTime() + toMs(options.horizon ?? '3650d');
    // Jump from due time to due time (sleeps, backoffs, wait timeouts) rather than tick by tick.
    for (let round = 0; round < MAX_REPLAY_ROUNDS; round++) {
      await t.runUntilIdle();
      const current = await store.getJob(id);
      if (!current || FINISHED_STATUSES.includes(current.status)) break;
      const due = current.runAt.getTime();
      if (due > horizon || (current.status === 'waiting' && due <= clock.now().getTime())) break;
      await t.advance(Math.max(1, due - clock.now().getTime()));
    }
    const replayed = (await store.getJob(id))!;
    const keptNames = new Set(kept.map((s) => s.name));
    const result: ReplayResult = {
      status: replayed.status,
      stepsRun: replayed.steps.filter((s) => s.status === 'completed' && !keptNames.has(s.name) && s.kind === 'step').map((s) => s.name),
    };
    if (replayed.result !== undefined) result.result = replayed.result;
    const last = replayed.errors.at(-1);
    if (last) result.error = { name: last.name, message: last.message, ...(last.code ? { code: last.code } : {}) };
    return result;
  } finally {
    await t.stop();
  }
}
