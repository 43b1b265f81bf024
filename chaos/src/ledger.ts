import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What each worker process appends, one JSON line per event, to its own file: every lease it got
 * and every ack (completion) it tried, with the token presented and whether the store accepted it.
 * Appended synchronously, so a SIGKILL loses nothing already written.
 */
export type LedgerEntry =
  | { t: 'claim'; job: string; token: string; attempt: number; owner: string; at: number }
  | { t: 'ack'; job: string; token: string; owner: string; start: number; at: number; ok: boolean; code?: string };

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
