import type { LedgerEntry } from './ledger.js';

/** The most runs of one job name that worked at once while holding their lease, and when. */
export interface ConcurrencyPeak {
  peak: number;
  /** When the peak was first reached (host clock, ms). */
  at?: number;
  /** Runs counted. */
  runs: number;
  /** Runs whose claim is not in the ledgers (not counted; a run is always logged after its claim). */
  unmatched: number;
}

type Interval = [start: number, end: number];

/**
 * The peak number of runs of job `name` working at once across all worker processes, counted by
 * lease, as the store's concurrency slots are: a run counts from its `run` line to its `end` line,
 * but only while its lease is valid. The lease runs from the claim to its `until`, and from each
 * accepted extension (`beat`, noted when the store answered) to that extension's `until`; it has
 * lapsed between an `until` that passed and the next extension. So:
 *
 * - a SIGKILLed run (no `end` line) counts until its lease ends: its slot is freed by lease expiry,
 *   not when the process died;
 * - a SIGSTOPped run counts until its lease ends, not while it goes on working after SIGCONT with
 *   a lease that expired meanwhile (another run may hold its slot by then; the fence refuses its
 *   completion), unless an extension made its lease valid again: from then on it counts again.
 *
 * Every stamp is the host clock, which is every engine's clock here, and the clock the store
 * judges leases and slots by (`now` of each claim). A run's `run` line is written after its claim
 * returned and its `end` line before its slot is released, so each counted interval lies inside the
 * time its slot was held: a peak above the limit is a real overlap, never an artefact of stamping.
 */
export function concurrencyPeak(ledger: readonly LedgerEntry[], name: string): ConcurrencyPeak {
  const claims = new Map<string, Extract<LedgerEntry, { t: 'claim' }>>();
  const beats = new Map<string, { at: number; until: number }[]>();
  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  const runKey = (job: string, attempt: number) => `${job}#${attempt}`;
  for (const e of ledger) {
    if (e.t === 'claim') claims.set(runKey(e.job, e.attempt), e);
    else if (e.t === 'beat') beats.set(e.token, [...(beats.get(e.token) ?? []), { at: e.at, until: e.until }]);
    else if (e.t === 'run' && e.name === name) starts.set(runKey(e.job, e.attempt), e.at);
    else if (e.t === 'end' && e.name === name) ends.set(runKey(e.job, e.attempt), e.at);
  }
  const intervals: Interval[] = [];
  let unmatched = 0;
  for (const [key, start] of starts) {
    const claim = claims.get(key);
    if (!claim || claim.until === undefined) {
      unmatched++;
      continue;
    }
    const working: Interval = [start, ends.get(key) ?? Infinity];
    for (const valid of leaseValidity({ at: claim.at, until: claim.until }, beats.get(claim.token) ?? [])) {
      const from = Math.max(working[0], valid[0]);
      const to = Math.min(working[1], valid[1]);
      if (from < to) intervals.push([from, to]);
    }
  }
  return { ...sweep(intervals), runs: starts.size, unmatched };
}

/**
 * When a lease was valid: each write (claim, then extensions in time order) sets its end, which
 * holds until the next write; where an end passed before the next write, the lease had lapsed.
 */
export function leaseValidity(claim: { at: number; until: number }, beats: readonly { at: number; until: number }[]): Interval[] {
  const writes = [claim, ...[...beats].sort((a, b) => a.at - b.at)];
  return writes.flatMap((w, i): Interval[] => {
    const end = Math.min(w.until, writes[i + 1]?.at ?? Infinity);
    return w.at < end ? [[w.at, end]] : [];
  });
}

/** The most intervals open at once (an interval closing at t is closed before one opening at t). */
function sweep(intervals: readonly Interval[]): { peak: number; at?: number } {
  const events = intervals
    .flatMap(([s, e]): [number, number][] => [
      [s, 1],
      [e, -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let best: { peak: number; at?: number } = { peak: 0 };
  for (const [t, d] of events) {
    open += d;
    if (open > best.peak) best = { peak: open, at: t };
  }
  return best;
}
