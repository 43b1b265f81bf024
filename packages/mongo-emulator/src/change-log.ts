/**
 * The emulator's oplog: every committed write appends one change event. Change stream cursors
 * read from it by sequence number; subscribers hear of every append as it happens.
 */
import type { Binary, Timestamp } from 'bson';
import { CommandError } from './errors.js';
import type { LogicalClock } from './cluster-time.js';
import { isPlainObject, type Doc } from './values.js';
import { compareBson } from './bson-order.js';

export type OperationType = 'insert' | 'update' | 'replace' | 'delete' | 'drop' | 'dropDatabase' | 'rename' | 'create' | 'createIndexes' | 'dropIndexes' | 'modify';

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

function diffDocuments(a: Doc, b: Doc, prefix: string, diff: UpdateDiff): void {
  for (const key of Object.keys(b)) {
    const path = prefix + key;
    if (!(key in a)) diff.updatedFields[path] = b[key];
    else if (isPlainObject(a[key]) && isPlainObject(b[key])) diffDocuments(a[key] as Doc, b[key] as Doc, path + '.', diff);
    else if (Array.isArray(a[key]) && Array.isArray(b[key])) diffArrays(a[key] as unknown[], b[key] as unknown[], path, diff);
    else if (differs(a[key], b[key])) diff.updatedFields[path] = b[key];
  }
  for (const key of Object.keys(a)) if (!(key in b)) diff.removedFields.push(prefix + key);
}

function diffArrays(a: unknown[], b: unknown[], path: string, diff: UpdateDiff): void {
  if (b.length < a.length) diff.truncatedArrays.push({ field: path, newSize: b.length });
  for (let i = 0; i < b.length; i++) {
    if (i >= a.length) diff.updatedFields[`${path}.${i}`] = b[i];
    else if (isPlainObject(a[i]) && isPlainObject(b[i])) diffDocuments(a[i] as Doc, b[i] as Doc, `${path}.${i}.`, diff);
    else if (differs(a[i], b[i])) diff.updatedFields[`${path}.${i}`] = b[i];
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
