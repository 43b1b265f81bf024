/**
 * A change stream cursor over the change log: events for one collection, database or the whole
 * cluster, shaped as mongod shapes them, filtered by the user's pipeline, with resume tokens
 * and an awaiting getMore that answers as soon as an event arrives or after maxAwaitTimeMS.
 */
import { MongoAggregator as Aggregator } from './query/mingo-context.js';
import { CommandError, notImplemented } from './errors.js';
import { resumeToken, seqFromToken, type ChangeEvent, type ChangeLog } from './change-log.js';
import type { Catalog } from './storage/catalog.js';
import { compareBson } from './bson-order.js';
import { isPlainObject, type Doc } from './values.js';
import type { CursorSource } from './cursors.js';

const ALLOWED_STAGES = new Set(['$match', '$project', '$addFields', '$set', '$unset', '$replaceRoot', '$replaceWith', '$redact']);
const STAGE_OPTIONS = new Set(['fullDocument', 'fullDocumentBeforeChange', 'resumeAfter', 'startAfter', 'startAtOperationTime', 'allChangesForCluster', 'showExpandedEvents']);
const DEFAULT_AWAIT_MS = 1000;

export interface StreamScope {
  db?: string;
  coll?: string;
}

export class ChangeStreamSource implements CursorSource {
  private position: number;
  private readonly fullDocument: string;
  private readonly aggregator?: Aggregator;
  private first = true;
  private closed = false;
  private invalidated = false;

  constructor(
    private readonly log: ChangeLog,
    private readonly catalog: Catalog,
    private readonly scope: StreamScope,
    stage: Doc,
    pipeline: Doc[],
  ) {
    for (const key of Object.keys(stage)) {
      if (!STAGE_OPTIONS.has(key)) throw new CommandError('IDLUnknownField', `BSON field '$changeStream.${key}' is an unknown field.`);
    }
    const fullDocument = (stage.fullDocument as string | undefined) ?? 'default';
    if (fullDocument !== 'default' && fullDocument !== 'updateLookup') throw notImplemented(`$changeStream fullDocument '${fullDocument}'`);
    if (stage.fullDocumentBeforeChange !== undefined && stage.fullDocumentBeforeChange !== 'off') {
      throw notImplemented(`$changeStream fullDocumentBeforeChange '${String(stage.fullDocumentBeforeChange)}'`);
    }
    if (stage.showExpandedEvents === true) throw notImplemented('$changeStream showExpandedEvents');
    this.fullDocument = fullDocument;
    const token = stage.resumeAfter ?? stage.startAfter;
    if (token !== undefined) this.position = seqFromToken(token);
    else if (stage.startAtOperationTime !== undefined) {
      const ts = stage.startAtOperationTime as { i?: number };
      this.position = Math.max(0, (ts.i ?? 1) - 1);
    } else this.position = log.latest;
    // Fail now, not on the first getMore, if the history is gone.
    log.since(this.position);
    for (const s of pipeline) {
      const name = isPlainObject(s) ? Object.keys(s)[0] : undefined;
      if (!name || !ALLOWED_STAGES.has(name)) {
        throw new CommandError('IllegalOperation', `${String(name)} is not permitted in a $changeStream pipeline`);
      }
    }
    if (pipeline.length > 0) this.aggregator = new Aggregator(pipeline);
  }

  /** A drop of the watched collection (or database) ends the stream with an invalidate event. */
  private invalidates(e: ChangeEvent): boolean {
    if (this.scope.coll !== undefined) return e.operationType === 'drop' || e.operationType === 'dropDatabase';
    if (this.scope.db !== undefined) return e.operationType === 'dropDatabase';
    return false;
  }

  private inScope(e: ChangeEvent): boolean {
    if (e.operationType === 'dropDatabase') return this.scope.db === undefined || e.db === this.scope.db;
    return (this.scope.db === undefined || e.db === this.scope.db) && (this.scope.coll === undefined || e.coll === this.scope.coll);
  }

  private shape(e: ChangeEvent): Doc {
    const event: Doc = {
      _id: resumeToken(e.seq),
      operationType: e.operationType,
      clusterTime: e.clusterTime,
      wallTime: e.wallTime,
      ns: e.operationType === 'dropDatabase' ? { db: e.db } : { db: e.db, coll: e.coll },
    };
    if (e.operationType !== 'drop' && e.operationType !== 'dropDatabase') event.documentKey = { _id: e.documentId };
    if (e.operationType === 'insert' || e.operationType === 'replace') event.fullDocument = e.fullDocument;
    if (e.operationType === 'update') {
      event.updateDescription = e.updateDescription;
      if (this.fullDocument === 'updateLookup') {
        event.fullDocument = this.catalog.get(e.db, e.coll)?.getById(e.documentId)?.doc ?? null;
      }
    }
    return event;
  }

  private collect(batchSize: number): Doc[] {
    const out: Doc[] = [];
    for (const e of this.log.since(this.position)) {
      if (batchSize > 0 && out.length >= batchSize) break;
      this.position = e.seq;
      if (!this.inScope(e)) continue;
      const event = this.shape(e);
      if (this.invalidates(e)) {
        out.push(...this.filtered(event));
        out.push({ _id: resumeToken(e.seq), operationType: 'invalidate', clusterTime: e.clusterTime, wallTime: e.wallTime });
        this.invalidated = true;
        break;
      }
      out.push(...this.filtered(event));
    }
    return out;
  }

  private filtered(event: Doc): Doc[] {
    const results = this.aggregator ? (this.aggregator.run([event]) as Doc[]) : [event];
    for (const r of results) {
      if (!isPlainObject(r) || compareBson(r._id, event._id) !== 0) {
        throw new CommandError('ChangeStreamFatalError', "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed.");
      }
    }
    return results;
  }

  async nextBatch(batchSize: number, maxTimeMS: number | undefined): Promise<{ docs: Doc[]; exhausted: boolean; extra: Doc }> {
    if (this.invalidated) return { docs: [], exhausted: true, extra: { postBatchResumeToken: resumeToken(this.position) } };
    let docs = this.collect(batchSize);
    if (docs.length === 0 && !this.first && !this.closed) {
      await this.log.waitForEvent(maxTimeMS ?? DEFAULT_AWAIT_MS);
      docs = this.closed ? [] : this.collect(batchSize);
    }
    this.first = false;
    return { docs, exhausted: this.invalidated, extra: { postBatchResumeToken: resumeToken(this.position) } };
  }

  close(): void {
    this.closed = true;
  }
}
