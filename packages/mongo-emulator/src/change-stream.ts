/**
 * A change stream cursor over the change log: events for one collection, database or the whole
 * cluster, shaped as mongod shapes them, filtered by the user's pipeline, with resume tokens
 * and an awaiting getMore that answers as soon as an event passing the pipeline arrives, or with
 * an empty batch after maxAwaitTimeMS, as mongod's does: writes the stream does not report (other
 * collections, events its `$match` drops) do not end the wait.
 */
import { Timestamp } from 'bson';
import { MongoAggregator as Aggregator } from './query/mingo-context.js';
import { compileFilter } from './query/filter.js';
import { compileInclusion } from './query/inclusion-projection.js';
import { CommandError } from './errors.js';
import { EXPANDED_EVENTS, resumeToken, seqFromToken, type ChangeEvent, type ChangeLog } from './change-log.js';
import { assertKnownStage } from './query/pipeline-stages.js';
import type { Catalog } from './storage/catalog.js';
import { compareBson } from './bson-order.js';
import { isPlainObject, type Doc } from './values.js';
import type { CursorSource } from './cursors.js';

const ALLOWED_STAGES = new Set(['$match', '$project', '$addFields', '$set', '$unset', '$replaceRoot', '$replaceWith', '$redact']);
const STAGE_OPTIONS = new Set([
  'fullDocument',
  'fullDocumentBeforeChange',
  'resumeAfter',
  'startAfter',
  'startAtOperationTime',
  'allChangesForCluster',
  'showExpandedEvents',
]);
const FULL_DOCUMENT = new Set(['default', 'updateLookup', 'whenAvailable', 'required']);
const BEFORE_CHANGE = new Set(['off', 'whenAvailable', 'required']);
const DEFAULT_AWAIT_MS = 1000;
/** Events about one document (they carry its documentKey). */
const DOCUMENT_EVENTS = new Set(['insert', 'update', 'replace', 'delete']);

export interface StreamScope {
  db?: string;
  coll?: string;
}

export class ChangeStreamSource implements CursorSource {
  private position: number;
  private readonly fullDocument: string;
  private readonly beforeChange: string;
  private readonly expanded: boolean;
  private readonly pipeline: (event: Doc) => Doc[];
  private first = true;
  private closed = false;
  private invalidated = false;
  /** Ends a getMore waiting for events, with an error if given (set while one waits). */
  private interrupt?: (reason?: CommandError) => void;

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
    if (!FULL_DOCUMENT.has(fullDocument))
      throw new CommandError('BadValue', `Enumeration value '${fullDocument}' for field '$changeStream.fullDocument' is not a valid value.`);
    const beforeChange = (stage.fullDocumentBeforeChange as string | undefined) ?? 'off';
    if (!BEFORE_CHANGE.has(beforeChange))
      throw new CommandError('BadValue', `Enumeration value '${beforeChange}' for field '$changeStream.fullDocumentBeforeChange' is not a valid value.`);
    this.fullDocument = fullDocument;
    this.beforeChange = beforeChange;
    this.expanded = stage.showExpandedEvents === true;
    const token = stage.resumeAfter ?? stage.startAfter;
    if (token !== undefined) this.position = seqFromToken(token);
    else if (stage.startAtOperationTime !== undefined) {
      const ts = stage.startAtOperationTime;
      if (!(ts instanceof Timestamp))
        throw new CommandError('TypeMismatch', "BSON field '$changeStream.startAtOperationTime' is the wrong type, expected type 'timestamp'");
      this.position = log.positionAt(ts);
    } else this.position = log.latest;
    // Fail now, not on the first getMore, if the history is gone.
    log.indexAfter(this.position);
    for (const s of pipeline) {
      const name = isPlainObject(s) ? Object.keys(s)[0] : undefined;
      assertKnownStage(String(name));
      if (!name || !ALLOWED_STAGES.has(name)) {
        throw new CommandError('IllegalOperation', `${String(name)} is not permitted in a $changeStream pipeline`);
      }
    }
    this.pipeline = compilePipeline(pipeline);
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
    if (e.documentId !== undefined || DOCUMENT_EVENTS.has(e.operationType)) event.documentKey = { _id: e.documentId };
    if (e.to) event.to = e.to;
    if (this.expanded && e.operationDescription) event.operationDescription = e.operationDescription;
    if (e.operationType === 'insert' || e.operationType === 'replace') event.fullDocument = e.fullDocument;
    if (e.operationType === 'update') {
      event.updateDescription = this.expanded
        ? withDisambiguatedPaths(e.updateDescription ?? {}, e.postImage ?? this.catalog.get(e.db, e.coll)?.getById(e.documentId)?.doc)
        : e.updateDescription;
      if (this.fullDocument === 'updateLookup') {
        event.fullDocument = this.catalog.get(e.db, e.coll)?.getById(e.documentId)?.doc ?? null;
      } else if (this.fullDocument !== 'default') {
        event.fullDocument = this.image(e, e.postImage, this.fullDocument, 'post');
      }
    }
    if (this.beforeChange !== 'off' && e.operationType !== 'insert' && DOCUMENT_EVENTS.has(e.operationType)) {
      event.fullDocumentBeforeChange = this.image(e, e.preImage, this.beforeChange, 'pre');
    }
    // "lsid", "txnNumber": present only if the operation is part of a multi-document
    // transaction (MongoDB manual, Change Events).
    if (e.txn) {
      event.lsid = e.txn.lsid;
      event.txnNumber = e.txn.txnNumber;
    }
    return event;
  }

  /** A pre- or post-image, or null when the collection does not keep them ('required' fails instead). */
  private image(e: ChangeEvent, image: Doc | undefined, mode: string, which: 'pre' | 'post'): Doc | null {
    if (image) return image;
    if (mode === 'required') {
      throw new CommandError(
        'NoMatchingDocument',
        `Change stream was configured to require a ${which}-image for all update, delete and replace events, but the ${which}-image was not found for event: { operationType: "${e.operationType}", ns: "${e.db}.${e.coll}" }`,
      );
    }
    return null;
  }

  private collect(batchSize: number): Doc[] {
    const out: Doc[] = [];
    for (let i = this.log.indexAfter(this.position), e = this.log.at(i); e !== undefined; e = this.log.at(++i)) {
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
    const results = this.pipeline(event);
    for (const r of results) {
      if (!isPlainObject(r) || compareBson(r._id, event._id) !== 0) {
        throw new CommandError(
          'ChangeStreamFatalError',
          'Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed.',
        );
      }
    }
    return results;
  }

  async nextBatch(batchSize: number, maxTimeMS: number | undefined): Promise<{ docs: Doc[]; exhausted: boolean; extra: Doc }> {
    if (this.invalidated) return { docs: [], exhausted: true, extra: { postBatchResumeToken: resumeToken(this.position) } };
    let docs = this.collect(batchSize);
    if (docs.length === 0 && !this.first && !this.closed) docs = await this.awaitEvents(batchSize, maxTimeMS ?? DEFAULT_AWAIT_MS);
    this.first = false;
    return { docs, exhausted: this.invalidated, extra: { postBatchResumeToken: resumeToken(this.position) } };
  }

  /**
   * Waits until events pass the pipeline (or the stream is invalidated), at most `ms` (a real
   * timer: it bounds a network wait), then answers with them, or with none when the time is up
   * or the cursor is killed. New events are looked at a microtask after they are appended, once
   * the write that appended them has applied all of its statements' events.
   */
  private awaitEvents(batchSize: number, ms: number): Promise<Doc[]> {
    return new Promise<Doc[]>((resolve, reject) => {
      let done = false;
      let looking = false;
      const finish = (docs: Doc[], err?: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        unsubscribe();
        this.interrupt = undefined;
        if (err === undefined) resolve(docs);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- `err` is whatever the look threw (narrowed from unknown)
        else reject(err);
      };
      const look = () => {
        looking = false;
        if (done) return;
        if (this.closed) return finish([]);
        try {
          const docs = this.collect(batchSize);
          if (docs.length > 0 || this.invalidated) finish(docs);
        } catch (err) {
          finish([], err);
        }
      };
      const unsubscribe = this.log.subscribe(() => {
        if (looking) return;
        looking = true;
        queueMicrotask(look);
      });
      const timer = setTimeout(() => finish([]), ms);
      timer.unref?.();
      this.interrupt = (reason) => finish([], reason);
    });
  }

  close(reason?: CommandError): void {
    this.closed = true;
    // A step-down fails the awaiting getMore (11602): its driver resumes the stream.
    this.interrupt?.(reason?.withLabels(['ResumableChangeStreamError']));
  }
}

/**
 * The stream's pipeline as one function of an event. Leading `$match` stages and inclusions of
 * plain paths (`$project`) are compiled once here; mingo's aggregator, which builds its stages
 * anew for every document it runs, only gets the stages after them, if any.
 */
function compilePipeline(pipeline: Doc[]): (event: Doc) => Doc[] {
  const leading: ((event: Doc) => Doc | undefined)[] = [];
  let i = 0;
  for (; i < pipeline.length; i++) {
    const stage = pipeline[i];
    const keys = Object.keys(stage);
    if (keys.length !== 1) break;
    const arg = stage[keys[0]];
    if (keys[0] === '$match' && isPlainObject(arg)) {
      const matcher = compileFilter(arg);
      leading.push((event) => (matcher.test(event) ? event : undefined));
      continue;
    }
    const project = keys[0] === '$project' ? compileInclusion(arg) : undefined;
    if (!project) break;
    leading.push(project);
  }
  const rest = i < pipeline.length ? new Aggregator(pipeline.slice(i)) : undefined;
  return (event) => {
    let current: Doc | undefined = event;
    for (const stage of leading) {
      current = stage(current);
      if (current === undefined) return [];
    }
    return rest ? (rest.run([current]) as Doc[]) : [current];
  };
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
    ...((description.truncatedArrays as Doc[] | undefined) ?? []).map((t) => t.field as string),
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
