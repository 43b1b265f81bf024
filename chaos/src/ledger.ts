import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What each worker process appends, one JSON line per event, to its own file: every lease it got
 * (with its end, `until`) and every extension of it that the store accepted (`beat`), every ack
 * (completion) it tried, with the token presented and whether the store accepted it, and when each
 * handler run started and stopped working (`run`, `end`: what the global-concurrency peak counts,
 * see concurrency-peak.ts). Times are the host's clock in ms, the engines' clock. Appended
 * synchronously, so a SIGKILL loses nothing already written.
 */
export type LedgerEntry =
  | { t: 'claim'; job: string; token: string; attempt: number; owner: string; at: number; until?: number }
  | { t: 'beat'; job: string; token: string; owner: string; at: number; until: number }
  | { t: 'ack'; job: string; token: string; owner: string; start: number; at: number; ok: boolean; code?: string }
  | RunEntry
  | MetricEntry;

/**
 * A soak's samples: the worker's memory (`mem`, every few seconds), and each change stream the
 * driver or Loom's watcher resumed after an error or a step-down (`resume`).
 */
export type MetricEntry = { t: 'mem'; owner: string; at: number; rss: number; heapUsed: number } | { t: 'resume'; owner: string; at: number };

/** A handler run of job `name` began (`run`) or stopped working (`end`); a run is its job's attempt. */
export type RunEntry =
  | { t: 'run'; job: string; attempt: number; name: string; owner: string; at: number }
  | { t: 'end'; job: string; attempt: number; name: string; owner: string; at: number };

export class Ledger {
  constructor(private readonly file: string) {}

  append(entry: LedgerEntry): void {
    appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }
}

/**
 * Every entry of every `*.jsonl` ledger in `dir` whose name starts with `prefix` (a torn last line
 * of a killed writer is skipped).
 */
export function readLedgers(dir: string, prefix = ''): LedgerEntry[] {
  const entries: LedgerEntry[] = [];
  for (const name of readdirSync(dir).filter((n) => n.startsWith(prefix) && n.endsWith('.jsonl'))) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (!line) continue;
      try {
        entries.push(JSON.parse(line) as LedgerEntry);
      } catch {
        // only the last line of a process killed mid-write can be torn
      }
    }
  }
  return entries;
}
