/**
 * The emulator's oplog: every committed write appends one change event. Change stream cursors
 * read from it by sequence number; subscribers hear of every append as it happens.
 */
import type { Binary, Timestamp } from 'bson';
import { CommandError } from './errors.js';
import type { LogicalClock } from './cluster-time.js';
import type { TransactionId } from './write-op.js';
import { isPlainObject, type Doc } from './values.js';
import { compareBson } from './bson-order.js';

export type OperationType =
  'insert' | 'update' | 'replace' | 'delete' | 'drop' | 'dropDatabase' | 'rename' | 'create' | 'createIndexes' | 'dropIndexes' | 'modify';

/** DDL events a change stream reports only with showExpandedEvents (mongod 6.0+). */
export const EXPANDED_EVENTS = new Set<OperationType>(['create', 'createIndexes', 'dropIndexes', 'modify']);

export interface ChangeEvent {
  seq: number;
  db: string;
  coll: string;
  operationType: OperationType;
  documentId?: unknown;
  fullDocument?: Doc;
  updateDescription?: Doc;
  /** The collection's UUID (reported with showExpandedEvents). */
  collectionUUID?: Binary;
  /** rename: the new namespace. */
  to?: { db: string; coll: string };
  /** DDL events: what changed (reported with showExpandedEvents). */
  operationDescription?: Doc;
  /** Set only when the collection has changeStreamPreAndPostImages enabled. */
  preImage?: Doc;
  postImage?: Doc;
  /** A write of a multi-document transaction: its session and transaction number. */
  txn?: TransactionId;
  clusterTime: Timestamp;
  wallTime: Date;
}

const MAX_EVENTS = 100_000;
/**
 * Trimming drops this many events at once: dropping one per append moved the whole 100,000-event
 * array every write (a fifth of a claim's CPU once the log was full).
 */
const TRIM_BATCH = 10_000;

export function resumeToken(seq: number): Doc {
  return { _data: seq.toString(16).toUpperCase().padStart(16, '0') };
}

export function seqFromToken(token: unknown): number {
  const data = isPlainObject(token) ? token._data : undefined;
  if (typeof data !== 'string' || !/^[0-9A-Fa-f]{1,16}$/.test(data)) {
    throw new CommandError('InvalidResumeToken', `invalid resume token: ${JSON.stringify(token)}`);
  }
  return parseInt(data, 16);
}

/**
 * Fields of `after` that differ from `before`, as a change event's updateDescription, computed
 * the way mongod diffs documents for its oplog: sub-documents and arrays are compared element by
 * element (a changed or appended element is a `path.i` update, a shorter array is reported in
 * truncatedArrays), so `$set: { 'a.0.b': 1 }` reports `a.0.b`, not the whole array.
 */
export function describeUpdate(before: Doc, after: Doc): Doc {
  const diff: UpdateDiff = { updatedFields: {}, removedFields: [], truncatedArrays: [] };
  diffDocuments(before, after, '', diff);
  return diff as unknown as Doc;
}

interface UpdateDiff {
  updatedFields: Doc;
  removedFields: string[];
  truncatedArrays: Doc[];
}

function differs(x: unknown, y: unknown): boolean {
  return compareBson(x, y) !== 0 || Array.isArray(x) !== Array.isArray(y);
}

/*
 * A flow document's update appends to (and trims) an array of hundreds of small sub-documents:
 * most elements compare equal, so paths are built only for what is reported, and an identical
 * value (same reference or same primitive) is skipped at once (diffing a value against itself
 * reports nothing).
 */
function diffDocuments(a: Doc, b: Doc, prefix: string, diff: UpdateDiff): void {
  for (const key of Object.keys(b)) {
    const y = b[key];
    if (!(key in a)) {
      diff.updatedFields[prefix + key] = y;
      continue;
    }
    const x = a[key];
    if (x === y) continue;
    if (isPlainObject(x) && isPlainObject(y)) diffDocuments(x, y, prefix + key + '.', diff);
    else if (Array.isArray(x) && Array.isArray(y)) diffArrays(x, y, prefix + key, diff);
    else if (differs(x, y)) diff.updatedFields[prefix + key] = y;
  }
  for (const key of Object.keys(a)) if (!(key in b)) diff.removedFields.push(prefix + key);
}

function diffArrays(a: unknown[], b: unknown[], path: string, diff: UpdateDiff): void {
  if (b.length < a.length) diff.truncatedArrays.push({ field: path, newSize: b.length });
  for (let i = 0; i < b.length; i++) {
    const y = b[i];
    if (i >= a.length) {
      diff.updatedFields[`${path}.${i}`] = y;
      continue;
    }
    const x = a[i];
    if (x === y) continue;
    if (isPlainObject(x) && isPlainObject(y)) diffElements(x, y, path, i, diff);
    else if (differs(x, y)) diff.updatedFields[`${path}.${i}`] = y;
  }
}

/**
 * diffDocuments for two sub-documents at `path.i`, shorter when both have the same keys in the same
 * order (an array of starts): every key is then in both and none removed, and the element's path
 * is built only if one of its fields is reported.
 */
function diffElements(a: Doc, b: Doc, path: string, i: number, diff: UpdateDiff): void {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  let same = ka.length === kb.length;
  for (let k = 0; same && k < ka.length; k++) same = ka[k] === kb[k];
  if (!same) return diffDocuments(a, b, `${path}.${i}.`, diff);
  let prefix: string | undefined;
  for (const key of kb) {
    const x = a[key];
    const y = b[key];
    if (x === y) continue;
    if (x instanceof Date && y instanceof Date) {
      if (x.getTime() === y.getTime() || !differs(x, y)) continue;
    } else if (isPlainObject(x) && isPlainObject(y)) {
      diffDocuments(x, y, `${(prefix ??= `${path}.${i}.`)}${key}.`, diff);
      continue;
    } else if (Array.isArray(x) && Array.isArray(y)) {
      diffArrays(x, y, (prefix ??= `${path}.${i}.`) + key, diff);
      continue;
    } else if (!differs(x, y)) continue;
    diff.updatedFields[(prefix ??= `${path}.${i}.`) + key] = y;
  }
}

export class ChangeLog {
  private readonly events: ChangeEvent[] = [];
  private seq = 0;
  private readonly listeners = new Set<() => void>();
  private readonly now: () => Date;

  constructor(
    now: () => Date,
    private readonly clock: LogicalClock,
  ) {
    this.now = now;
  }

  /** The sequence number of the latest event (0 when none). */
  get latest(): number {
    return this.seq;
  }

  /** Appends `event` (taken over, not copied) with its sequence number, cluster time and wall time. */
  append(event: Omit<ChangeEvent, 'seq' | 'clusterTime' | 'wallTime'>): void {
    this.seq++;
    const stamped = event as ChangeEvent;
    stamped.seq = this.seq;
    stamped.wallTime = this.now();
    stamped.clusterTime = this.clock.tick();
    this.events.push(stamped);
    if (this.events.length > MAX_EVENTS + TRIM_BATCH) this.events.splice(0, this.events.length - MAX_EVENTS);
    for (const listener of this.listeners) listener();
  }

  /** The position just before the first event at or after `ts` (startAtOperationTime). */
  positionAt(ts: Timestamp): number {
    for (const e of this.events) if (e.clusterTime.compare(ts) >= 0) return e.seq - 1;
    return this.seq;
  }

  /**
   * The index in `events` of the first event after `seq` (`events.length` when there is none);
   * throws ChangeStreamHistoryLost if events after `seq` were already trimmed. Read the events
   * with `at(i)` from there: no copy of the log's tail per read.
   */
  indexAfter(seq: number): number {
    if (this.events.length === 0) return 0;
    const first = this.events[0].seq;
    if (seq < first - 1) {
      throw new CommandError('ChangeStreamHistoryLost', 'Resume of change stream was not possible, as the resume point may no longer be in the oplog.');
    }
    return Math.min(this.events.length, Math.max(0, seq - first + 1));
  }

  /** The event at index `i` (from `indexAfter`), or undefined past the end. */
  at(i: number): ChangeEvent | undefined {
    return this.events[i];
  }

  /**
   * Calls `listener` synchronously after every append, until the returned function is called.
   * Awaiting change stream cursors use it to look at new events as they arrive.
   */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
