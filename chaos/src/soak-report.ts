import type { Db } from 'mongodb';
import type { LedgerEntry } from './ledger.js';
import { CRON_NAME } from './soak-jobs.js';

/**
 * What a soak reports beyond the oracle's verdict (issue 28, item 6): the engines' memory, what
 * the store still holds when every job has finished, stuck jobs, change-stream resumes and the
 * cron schedule's slots.
 */

/** Memory of one engine process that ran the whole soak (never killed or paused). */
export interface MemoryGrowth {
  /** Median RSS (bytes) in the two minutes after warm-up. */
  warm: number;
  /** Median RSS (bytes) in the last two minutes. */
  end: number;
  /** `end / warm - 1`. */
  growth: number;
  samples: number;
}

const WINDOW_MS = 120_000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * The RSS of `owner` after warm-up (the larger of 2 minutes and a tenth of the soak after
 * `started`) against its last two minutes, each the median of its samples (a single sample moves
 * with the garbage collector). Null without samples in both windows.
 */
export function memoryGrowth(ledger: readonly LedgerEntry[], owner: string, started: number, soakMs: number): MemoryGrowth | null {
  const samples = ledger.filter((e): e is Extract<LedgerEntry, { t: 'mem' }> => e.t === 'mem' && e.owner === owner).sort((a, b) => a.at - b.at);
  if (samples.length === 0) return null;
  const warmFrom = started + Math.max(WINDOW_MS, soakMs / 10);
  const last = samples[samples.length - 1]!.at;
  const warm = samples.filter((s) => s.at >= warmFrom && s.at < warmFrom + WINDOW_MS).map((s) => s.rss);
  const end = samples.filter((s) => s.at > last - WINDOW_MS).map((s) => s.rss);
  if (warm.length === 0 || end.length === 0) return null;
  const w = median(warm);
  const e = median(end);
  return { warm: w, end: e, growth: e / w - 1, samples: samples.length };
}

/** Concurrency slots still held in the flow collection at `now` (a slot's `u` is its lease's end). */
export async function flowSlotsHeld(db: Db, now: Date): Promise<number> {
  const docs = await db
    .collection<{ h?: { t: string; u: Date }[] }>('loom_flow')
    .find({ 'h.0': { $exists: true } }, { projection: { h: 1 } })
    .toArray();
  return docs.reduce((n, doc) => n + (doc.h ?? []).filter((slot) => slot.u.getTime() >= now.getTime()).length, 0);
}

/**
 * Jobs still `running` whose lease ended more than `graceMs` before `now`: nobody claimed them back
 * although they were claimable (with engines running, a reclaim happens within a poll interval).
 */
export async function stuckRunning(db: Db, now: Date, graceMs: number): Promise<number> {
  return db.collection('loom_jobs').countDocuments({ status: 'running', 'lease.until': { $lt: new Date(now.getTime() - graceMs) } });
}

/** Change streams opened from a resume point, over every worker. */
export function changeStreamResumes(ledger: readonly LedgerEntry[]): number {
  return ledger.filter((e) => e.t === 'resume').length;
}

/** The cron schedule's runs: slots enqueued, slots missing between the first and the last, runs not completed. */
export interface CronCheck {
  fires: number;
  gaps: number;
  unfinished: number;
}

/** The schedule fires every `everyMs`: every slot from its first to its last must have exactly one job, completed. */
export async function cronCheck(db: Db, everyMs: number): Promise<CronCheck> {
  const jobs = await db
    .collection('loom_jobs')
    .find({ name: CRON_NAME }, { projection: { scheduledFor: 1, status: 1 } })
    .toArray();
  const slots = [...new Set(jobs.map((j) => (j.scheduledFor as Date).getTime()))].sort((a, b) => a - b);
  const expected = slots.length === 0 ? 0 : Math.round((slots[slots.length - 1]! - slots[0]!) / everyMs) + 1;
  return { fires: jobs.length, gaps: expected - slots.length, unfinished: jobs.filter((j) => j.status !== 'completed').length };
}
