/**
 * A change stream cursor over the change log: events for one collection, database or the whole
 * cluster, shaped as mongod shapes them, filtered by the user's pipeline, with resume tokens
 * and an awaiting getMore that answers as soon as an event arrives or after maxAwaitTimeMS.
 */
import { Timestamp } from 'bson';
import { MongoAggregator as Aggregator } from './query/mingo-context.js';
import { CommandError } from './errors.js';
import { EXPANDED_EVENTS, resumeToken, seqFromToken, type ChangeEvent, type ChangeLog } from './change-log.js';
import { assertKnownStage } from './query/pipeline-stages.js';
import type { Catalog } from './storage/catalog.js';
import { compareBson } from './bson-order.js';
import { isPlainObject, type Doc } from './values.js';
import type { CursorSource } from './cursors.js';

const ALLOWED_STAGES = new Set(['$match', '$project', '$addFields', '$set', '$unset', '$replaceRoot', '$replaceWith', '$redact']);
const STAGE_OPTIONS = new Set(['fullDocument', 'fullDocumentBeforeChange', 'resumeAfter', 'startAfter', 'startAtOperationTime', 'allChangesForCluster', 'showExpandedEvents']);
const FULL_DOCUMENT = new Set(['default', 'updateLookup', 'whenAvailable', 'required']);
const BEFORE_CHANGE = new Set(['off', 'whenAvailable', 'required']);
const DEFAULT_AWAIT_MS = 1000;

export interface StreamScope {
  db?: string;
  coll?: string;
}

export class ChangeStreamSource implements CursorSource {
  private position: number;
  private readonly fullDocument: string;
  private readonly beforeChange: string;
  private readonly expanded: boolean;
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
    if (!FULL_DOCUMENT.has(fullDocument)) throw new CommandError('BadValue', `Enumeration value '${fullDocument}' for field '$changeStream.fullDocument' is not a valid value.`);
    const beforeChange = (stage.fullDocumentBeforeChange as string | undefined) ?? 'off';
    if (!BEFORE_CHANGE.has(beforeChange)) throw new CommandError('BadValue', `Enumeration value '${beforeChange}' for field '$changeStream.fullDocumentBeforeChange' is not a valid value.`);
    this.fullDocument = fullDocument;
    this.beforeChange = beforeChange;
    this.expanded = stage.showExpandedEvents === true;
    const token = stage.resumeAfter ?? stage.startAfter;
    if (token !== undefined) this.position = seqFromToken(token);
    else if (stage.startAtOperationTime !== undefined) {
      const ts = stage.startAtOperationTime;
      if (!(ts instanceof Timestamp)) throw new CommandError('TypeMismatch', "BSON field '$changeStream.startAtOperationTime' is the wrong type, expected type 'timestamp'");
      this.position = log.positionAt(ts);
    } else this.position = log.latest;
    // Fail now, not on the first getMore, if the history is gone.
    log.since(this.position);
    for (const s of pipeline) {
      const name = isPlainObject(s) ? Object.keys(s)[0] : undefined;
      assertKnownStage(String(name));
      if (!name || !ALLOWED_STAGES.has(name)) {
        throw new CommandError('IllegalOperation', `${String(name)} is not permitted in a $changeStream pipeline`);
      }
    }
    if (pipeline.length > 0) this.aggregator = new Aggregator(pipeline);
  }

  /** A drop or rename of the watched collection (or a drop of its database) ends the stream. */
  private invalidates(e: ChangeEvent): boolean {
    if (this.scope.coll !== undefined) return e.operationType === 'drop' || e.operationType === 'rename' || e.operationType === 'dropDatabase';
    if (this.scope.db !== undefined) return e.operationType === 'dropDatabase';
    return false;
  }

  private inScope(e: ChangeEvent): boolean {
    if (EXPANDED_EVENTS.has(e.operationType) && !this.expanded) return false;
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
    if (this.expanded && e.collectionUUID && e.operationType !== 'dropDatabase') event.collectionUUID = e.collectionUUID;
    if (e.documentId !== undefined || ['insert', 'update', 'replace', 'delete'].includes(e.operationType)) event.documentKey = { _id: e.documentId };
    if (e.to) event.to = e.to;
    if (this.expanded && e.operationDescription) event.operationDescription = e.operationDescription;
    if (e.operationType === 'insert' || e.operationType === 'replace') event.fullDocument = e.fullDocument;
    if (e.operationType === 'update') {
      event.updateDescription = this.expanded ? withDisambiguatedPaths(e.updateDescription ?? {}, e.postImage ?? this.catalog.get(e.db, e.coll)?.getById(e.documentId)?.doc) : e.updateDescription;
      if (this.fullDocument === 'updateLookup') {
        event.fullDocument = this.catalog.get(e.db, e.coll)?.getById(e.documentId)?.doc ?? null;
      } else if (this.fullDocument !== 'default') {
        event.fullDocument = this.image(e, e.postImage, this.fullDocument, 'post');
      }
    }
    if (this.beforeChange !== 'off' && ['update', 'replace', 'delete'].includes(e.operationType)) {
      event.fullDocumentBeforeChange = this.image(e, e.preImage, this.beforeChange, 'pre');
    }
    return event;
  }

  /** A pre- or post-image, or null when the collection does not keep them ('required' fails instead). */
  private image(e: ChangeEvent, image: Doc | undefined, mode: string, which: 'pre' | 'post'): Doc | null {
    if (image) return image;
    if (mode === 'required') {
      throw new CommandError('NoMatchingDocument', `Change stream was configured to require a ${which}-image for all update, delete and replace events, but the ${which}-image was not found for event: { operationType: "${e.operationType}", ns: "${e.db}.${e.coll}" }`);
    }
    return null;
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

/**
 * showExpandedEvents adds `disambiguatedPaths` for every reported path that a dotted string
 * cannot express unambiguously (a numeric field name, or a field name containing a dot): the
 * path as an array, array indices as numbers and field names as strings.
 */
function withDisambiguatedPaths(description: Doc, doc: Doc | undefined): Doc {
  const paths = [
    ...Object.keys((description.updatedFields as Doc | undefined) ?? {}),
    ...((description.removedFields as string[] | undefined) ?? []),
    ...(((description.truncatedArrays as Doc[] | undefined) ?? []).map((t) => t.field as string)),
  ];
  const disambiguated: Doc = {};
  for (const path of paths) {
    const parts: (string | number)[] = [];
    let ambiguous = false;
    let cur: unknown = doc;
    for (const part of path.split('.')) {
      if (Array.isArray(cur) && /^\d+$/.test(part)) {
        parts.push(Number(part));
        cur = cur[Number(part)];
      } else {
        if (/^\d+$/.test(part)) ambiguous = true;
        parts.push(part);
        cur = isPlainObject(cur) ? cur[part] : undefined;
      }
    }
    if (ambiguous) disambiguated[path] = parts;
  }
  return { ...description, disambiguatedPaths: disambiguated };
}
