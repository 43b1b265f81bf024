/**
 * Server-side cursors: find/aggregate/list results kept between getMores, with mongod's
 * batching (101 documents in a first batch by default, replies kept under 16 MiB).
 */
import { calculateObjectSize, Long } from 'bson';
import { CommandError } from './errors.js';
import type { Doc } from './values.js';

export const DEFAULT_FIRST_BATCH = 101;
/** mongod's cursorTimeoutMillis default. */
const CURSOR_IDLE_MS = 10 * 60 * 1000;
const MAX_REPLY_BYTES = 16 * 1024 * 1024 - 16 * 1024;

export interface CursorSource {
  /** Next batch: up to `batchSize` documents (0 = no count limit). */
  nextBatch(batchSize: number, maxTimeMS: number | undefined): Promise<{ docs: Doc[]; exhausted: boolean; extra?: Doc }>;
  /** Ends the cursor; a batch being awaited fails with `reason` if given, else answers what it has. */
  close?(reason?: CommandError): void;
}

export interface OpenCursor {
  id: number;
  /** Wall-clock ms of the last use: like mongod, idle cursors are reaped after 10 minutes. */
  lastUsed: number;
  ns: string;
  source: CursorSource;
  /** The session that opened it (a cursor belongs to its session's transaction). */
  sessionKey?: string;
}

/** Adapts a document iterator (with an optional limit) into a cursor source. */
export class IteratorSource implements CursorSource {
  private peeked: IteratorResult<Doc> | undefined;
  private remaining: number;

  constructor(
    private iterator: Iterator<Doc>,
    limit = 0,
  ) {
    this.remaining = limit > 0 ? limit : Infinity;
  }

  private next(): IteratorResult<Doc> {
    if (this.peeked) {
      const p = this.peeked;
      this.peeked = undefined;
      return p;
    }
    return this.iterator.next();
  }

  async nextBatch(batchSize: number): Promise<{ docs: Doc[]; exhausted: boolean }> {
    const batch = this.takeBatch(batchSize);
    // Index iterators must not outlive later writes: keep what remains as a plain array.
    if (!batch.exhausted) this.detach();
    return batch;
  }

  private detach(): void {
    const rest: Doc[] = [];
    if (this.peeked && !this.peeked.done) rest.push(this.peeked.value);
    this.peeked = undefined;
    for (let r = this.iterator.next(); !r.done && rest.length < this.remaining; r = this.iterator.next()) rest.push(r.value);
    this.iterator = rest[Symbol.iterator]();
  }

  takeBatch(batchSize: number): { docs: Doc[]; exhausted: boolean } {
    const docs: Doc[] = [];
    let bytes = 0;
    const max = batchSize > 0 ? batchSize : Infinity;
    while (docs.length < max && this.remaining > 0) {
      const r = this.next();
      if (r.done) return { docs, exhausted: true };
      // Each array element also costs its type byte, its index as a key and that key's NUL: with
      // small documents that is several percent of the reply (100,000 of them overran 17 MiB).
      bytes += calculateObjectSize(r.value) + 2 + String(docs.length).length;
      if (bytes > MAX_REPLY_BYTES && docs.length > 0) {
        this.peeked = r;
        return { docs, exhausted: false };
      }
      docs.push(r.value);
      this.remaining--;
    }
    if (this.remaining <= 0) return { docs, exhausted: true };
    const r = this.next();
    if (r.done) return { docs, exhausted: true };
    this.peeked = r;
    return { docs, exhausted: false };
  }
}

export class CursorRegistry {
  private readonly cursors = new Map<number, OpenCursor>();
  private nextId = 1_000_001;

  register(ns: string, source: CursorSource, sessionKey?: string): OpenCursor {
    this.reapIdle();
    const cursor = { id: this.nextId++, ns, source, sessionKey, lastUsed: Date.now() };
    this.cursors.set(cursor.id, cursor);
    return cursor;
  }

  get(id: number, ns?: string): OpenCursor {
    const cursor = this.cursors.get(id);
    if (!cursor) throw new CommandError('CursorNotFound', `cursor id ${id} not found`);
    cursor.lastUsed = Date.now();
    if (ns && cursor.ns !== ns && !cursor.ns.includes('.$cmd.')) {
      throw new CommandError('Unauthorized', `Requested getMore on namespace '${ns}', but cursor belongs to a different namespace ${cursor.ns}`);
    }
    return cursor;
  }

  /** The cursor, if open (no side effects: used to classify errors). */
  peek(id: number): OpenCursor | undefined {
    return this.cursors.get(id);
  }

  kill(id: number): boolean {
    const cursor = this.cursors.get(id);
    if (!cursor) return false;
    cursor.source.close?.();
    this.cursors.delete(id);
    return true;
  }

  /** Kills the cursors whose source `matches`, failing a batch they await with `reason`; returns how many. */
  killWhere(matches: (source: CursorSource) => boolean, reason: CommandError): number {
    let killed = 0;
    for (const cursor of [...this.cursors.values()]) {
      if (!matches(cursor.source)) continue;
      cursor.source.close?.(reason);
      this.cursors.delete(cursor.id);
      killed++;
    }
    return killed;
  }

  private reapIdle(): void {
    const cutoff = Date.now() - CURSOR_IDLE_MS;
    for (const cursor of this.cursors.values()) if (cursor.lastUsed < cutoff) this.kill(cursor.id);
  }

  killAll(): void {
    for (const id of [...this.cursors.keys()]) this.kill(id);
  }

  get size(): number {
    return this.cursors.size;
  }
}

/** `{ cursor: { id: Long, ns, firstBatch|nextBatch }, ok: 1 }` with the id as BSON int64. */
export function cursorReply(id: number, ns: string, docs: Doc[], first: boolean, extra: Doc = {}): Doc {
  return {
    cursor: { [first ? 'firstBatch' : 'nextBatch']: docs, id: Long.fromNumber(id), ns, ...extra },
    ok: 1,
  };
}

/** Runs the first batch; registers a cursor only if documents remain. */
export async function openCursor(registry: CursorRegistry, ns: string, source: CursorSource, batchSize: number, sessionKey?: string): Promise<Doc> {
  const { docs, exhausted, extra } = await source.nextBatch(batchSize, undefined);
  if (exhausted) return cursorReply(0, ns, docs, true, extra);
  const cursor = registry.register(ns, source, sessionKey);
  return cursorReply(cursor.id, ns, docs, true, extra);
}
