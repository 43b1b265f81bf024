import { BSON } from 'mongodb';
import type { DeadLetterDocument } from '../schema/documents.js';

/** MongoDB's largest document (16 MiB) less 1 KiB of slack for the field names this file adds. */
export const MAX_DEAD_LETTER_BYTES = 16 * 1024 * 1024 - 1024;

/** What gives way, in order, when a dead letter would not fit: the least needed to understand and replay the death first. */
const DROPS: Array<{ field: string; drop: (job: DeadLetterDocument['job']) => void }> = [
  { field: 'result', drop: (job) => delete job.result },
  { field: 'progress', drop: (job) => delete job.progress },
  { field: 'steps.result', drop: (job) => (job.steps = job.steps.map(({ result: _result, ...step }) => step)) },
  { field: 'signals.data', drop: (job) => (job.signals = job.signals.map(({ data: _data, ...signal }) => ({ ...signal, data: null }))) },
  { field: 'payload', drop: (job) => (job.payload = null) },
];

/**
 * A dead letter that MongoDB can store. A job near the 16 MiB limit plus its final error and
 * reason may not fit (the insert would fail with 10334 on every try, and the job would never
 * leave `running`): then result, progress, step results, signal data and finally the payload are
 * dropped, in that order, until it fits, and the reason says what was dropped. Only used past the
 * limit: a dead letter that fits is stored whole.
 */
export function fitDeadLetter(dead: DeadLetterDocument): DeadLetterDocument {
  const size = BSON.calculateObjectSize(dead);
  if (size <= MAX_DEAD_LETTER_BYTES) return dead;
  const job = { ...dead.job };
  const dropped: string[] = [];
  const fits = (): boolean => BSON.calculateObjectSize({ ...dead, job }) <= MAX_DEAD_LETTER_BYTES;
  for (const { field, drop } of DROPS) {
    drop(job);
    dropped.push(field);
    if (fits()) break;
  }
  const note = ` [dead letter truncated: the job was about ${size} bytes with its final error, over MongoDB's 16 MiB document limit; dropped ${dropped.join(', ')}]`;
  const reason = dead.reason + note;
  return { ...dead, reason, truncated: dropped, job: { ...job, deadReason: (job.deadReason ?? dead.reason) + note } };
}
