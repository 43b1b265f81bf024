import { Binary, BSON, ObjectId, type ClientSession, type Collection } from 'mongodb';
import { payloadTooLarge, type JobRecord, type PayloadLimits } from '@loom/core';
import type { DeadLetterDocument, JobDocument, StoredValueRef, ValueChunkDocument, ValueFileDocument } from '../schema/documents.js';
import type { IndexSpec } from '../schema/indexes.js';
import type { StoreLogger } from '../options.js';
import { withSession } from '../connection/collections.js';

/**
 * Payloads and results over the store's `offloadThreshold` (issue 33), kept in two collections of
 * GridFS's layout in the store's database (`<prefix>payloads.files` / `.chunks`, readable with the
 * driver's `GridFSBucket({ bucketName: '<prefix>payloads' })`): the file holds the BSON of
 * `{ v: value }` (so a value reads back exactly as a document field would), and the job keeps
 * `{ fileId, size }` in `payloadRef` / `resultRef` with `payload: null` / no `result`. Files are
 * written with plain inserts, before the job's write and with its session, so an enqueue or a
 * completion in a transaction stores its file only if the transaction commits.
 *
 * Claims and `getJob` load the values (one `find` on the chunks for all the jobs read); lists read
 * the references only. A file outlives its job when the TTL index removes the job, when a process
 * dies between the file's insert and the job's, or when a write referencing it is refused: the
 * {@link OffloadedValues.sweep} (the store's `maintain`) deletes files no job or dead letter
 * references, once they are older than {@link ORPHAN_GRACE_MS}. Explicit removals (`removeJob`,
 * `purgeDeadLetters`) delete their jobs' files at once.
 */

/** GridFS's default chunk size: 255 KiB. */
export const CHUNK_BYTES = 255 * 1024;
/**
 * How old an unreferenced file must be before the sweep deletes it: longer than any enqueue or
 * completion takes between writing its file and the job's write (or committing its transaction).
 */
export const ORPHAN_GRACE_MS = 60 * 60_000;
/** How long after finding a file referenced the sweep asks again (its job may be removed by then). */
export const RECHECK_MS = 24 * 60 * 60_000;
/** Files one sweep round looks at; a sweep runs rounds until a round finds fewer. */
const SWEEP_BATCH = 500;
/** The most rounds of one sweep: 50,000 files; the rest wait for the next maintenance. */
const SWEEP_ROUNDS = 100;

export const FILES_CHECK_INDEX = 'loom_payload_files_check';

/** The indexes of the files collection. */
export function valueFilesIndexPlan(): IndexSpec[] {
  return [
    { name: FILES_CHECK_INDEX, key: { 'metadata.checkAt': 1 } },
    { name: 'loom_payload_files_job', key: { 'metadata.jobId': 1 } },
  ];
}

/** The indexes of the chunks collection: GridFS's own, which reads a file's chunks in order. */
export function valueChunksIndexPlan(): IndexSpec[] {
  return [{ name: 'files_id_1_n_1', key: { files_id: 1, n: 1 }, unique: true }];
}

/** A value's size as the limits count it: its BSON as a document field, less the field's own bytes. */
export function valueSize(value: unknown): number {
  // { v: value } is the value's bytes plus 8: the document's length and end (5), type, "v" and NUL (3).
  return BSON.calculateObjectSize({ v: value }) - 8;
}

/** A file to write before the job referencing it; `owner._id` is read at the write (an enqueue may change a job's id until then). */
export interface PendingFile {
  ref: StoredValueRef;
  owner: { _id: ObjectId };
  kind: 'payload' | 'result';
  bytes: Uint8Array;
}

export class OffloadedValues {
  constructor(
    private readonly files: Collection<ValueFileDocument>,
    private readonly chunks: Collection<ValueChunkDocument>,
    private readonly jobs: () => Collection<JobDocument>,
    private readonly deadLetters: Collection<DeadLetterDocument>,
    readonly limits: PayloadLimits,
    private readonly logger: StoreLogger,
  ) {}

  /**
   * Checks the payloads of new job documents against `maxPayloadSize` (throwing
   * `PAYLOAD_TOO_LARGE` before anything is written) and moves each over the threshold to a file:
   * the document gets `payload: null` and its `payloadRef`. Writes the files (with `session`);
   * the caller then writes the documents.
   */
  async offloadPayloads(docs: JobDocument[], now: Date, session: ClientSession | undefined): Promise<void> {
    await this.writeFiles(this.preparePayloads(docs), now, session);
  }

  /**
   * The first half of {@link offloadPayloads}, writing nothing: checks every payload (throwing
   * `PAYLOAD_TOO_LARGE`), moves the large ones out of their documents, and returns their files
   * for {@link writeFiles}.
   */
  preparePayloads(docs: JobDocument[]): PendingFile[] {
    const pending: PendingFile[] = [];
    for (const doc of docs) {
      if (doc.payload === undefined || doc.payload === null || doc.payloadRef !== undefined) continue;
      const file = this.prepare(`The payload of job "${doc.name}"`, doc.payload, doc, 'payload');
      if (!file) continue;
      doc.payload = null;
      doc.payloadRef = file.ref;
      pending.push(file);
    }
    return pending;
  }

  /**
   * A result to complete `jobId` with: inline (`result`) when it is small, else written to a file
   * (with `session`) whose reference is returned. Throws `PAYLOAD_TOO_LARGE` (writing nothing) over
   * `maxPayloadSize`.
   */
  async offloadResult(jobId: ObjectId, result: unknown, now: Date, session: ClientSession | undefined): Promise<{ result?: unknown; ref?: StoredValueRef }> {
    const file = result === undefined ? null : this.prepare(`The result of job ${jobId.toHexString()}`, result, { _id: jobId }, 'result');
    if (!file) return result === undefined ? {} : { result };
    await this.writeFiles([file], now, session);
    return { ref: file.ref };
  }

  /** Throws `PAYLOAD_TOO_LARGE` when a payload of `docs` is over the limit (writing nothing). */
  checkPayloads(docs: readonly JobDocument[]): void {
    for (const doc of docs) this.isLarge(`The payload of job "${doc.name}"`, doc.payload);
  }

  /** Whether `value` goes to a file (over the threshold); throws `PAYLOAD_TOO_LARGE` over the limit. */
  isLarge(subject: string, value: unknown): boolean {
    if (value === undefined) return false;
    const size = valueSize(value);
    const refused = payloadTooLarge(subject, value, this.limits, size);
    if (refused) throw refused;
    return size > this.limits.offloadThreshold;
  }

  private prepare(subject: string, value: unknown, owner: { _id: ObjectId }, kind: 'payload' | 'result'): PendingFile | null {
    if (!this.isLarge(subject, value)) return null;
    const bytes = BSON.serialize({ v: value });
    return { ref: { fileId: new ObjectId(), size: bytes.length - 8 }, owner, kind, bytes };
  }

  /** Inserts the files of {@link preparePayloads} (with `session`: in its transaction). */
  async writeFiles(pending: PendingFile[], now: Date, session: ClientSession | undefined): Promise<void> {
    if (pending.length === 0) return;
    const chunks: ValueChunkDocument[] = [];
    for (const file of pending) {
      for (let n = 0, at = 0; at < file.bytes.length; n++, at += CHUNK_BYTES) {
        chunks.push({ _id: new ObjectId(), files_id: file.ref.fileId, n, data: new Binary(file.bytes.subarray(at, at + CHUNK_BYTES)) });
      }
    }
    // Chunks first: a file document always has its chunks (a crash leaves chunks the sweep cannot
    // see, but no file that cannot be read; see deleteChunksWithoutFile).
    await this.chunks.insertMany(chunks, { ordered: false, ...withSession(session) });
    await this.files.insertMany(
      pending.map((file) => ({
        _id: file.ref.fileId,
        length: file.bytes.length,
        chunkSize: CHUNK_BYTES,
        uploadDate: now,
        filename: `${file.owner._id.toHexString()}.${file.kind}.bson`,
        metadata: { jobId: file.owner._id, kind: file.kind, checkAt: new Date(now.getTime() + ORPHAN_GRACE_MS) },
      })),
      { ordered: false, ...withSession(session) },
    );
  }

  /**
   * Puts the offloaded payloads and results of `records` (from documents with references) in
   * place: one read of the chunks for all. A file that is gone (which only a manual deletion can
   * cause) leaves the value undefined, logged: the run then fails on its payload instead of every
   * claim failing.
   */
  async load(records: JobRecord[], session?: ClientSession): Promise<JobRecord[]> {
    const wanted = new Map<string, { record: JobRecord; field: 'payload' | 'result' }[]>();
    for (const record of records) {
      for (const [field, ref] of [
        ['payload', record.offloadedPayload],
        ['result', record.offloadedResult],
      ] as const) {
        if (ref === undefined) continue;
        wanted.set(ref.fileId, [...(wanted.get(ref.fileId) ?? []), { record, field }]);
      }
    }
    if (wanted.size === 0) return records;
    const values = await this.read(
      [...wanted.keys()].map((id) => ObjectId.createFromHexString(id)),
      session,
    );
    for (const [fileId, targets] of wanted) {
      const value = values.get(fileId);
      if (!values.has(fileId)) {
        this.logger.error(
          { fileId, jobIds: targets.map((t) => t.record.id) },
          `offloaded ${targets[0]!.field} ${fileId} of job ${targets[0]!.record.id} is missing from the payload bucket; it reads as undefined`,
        );
      }
      for (const { record, field } of targets) record[field] = value;
    }
    return records;
  }

  /** The values of files, by hex id (absent: no such file or it is incomplete). */
  private async read(fileIds: ObjectId[], session?: ClientSession): Promise<Map<string, unknown>> {
    const parts = new Map<string, Uint8Array[]>();
    const cursor = this.chunks.find(
      { files_id: { $in: fileIds } },
      { sort: { files_id: 1, n: 1 }, projection: { _id: 0, files_id: 1, n: 1, data: 1 }, ...withSession(session) },
    );
    for await (const chunk of cursor) {
      const id = chunk.files_id.toHexString();
      const list = parts.get(id) ?? [];
      if (list.length !== chunk.n) continue; // a gap: the file is incomplete
      list.push(chunk.data.buffer);
      parts.set(id, list);
    }
    const values = new Map<string, unknown>();
    for (const [id, list] of parts) {
      try {
        values.set(id, (BSON.deserialize(Buffer.concat(list)) as { v: unknown }).v);
      } catch (err) {
        this.logger.error({ err, fileId: id }, `offloaded value ${id} cannot be read (incomplete or damaged)`);
      }
    }
    return values;
  }

  /** Deletes these files and their chunks. */
  async deleteFiles(fileIds: ObjectId[], session?: ClientSession): Promise<void> {
    if (fileIds.length === 0) return;
    // The file first: a crash in between leaves chunks nobody reads, never a file without chunks.
    await this.files.deleteMany({ _id: { $in: fileIds } }, withSession(session));
    await this.chunks.deleteMany({ files_id: { $in: fileIds } }, withSession(session));
  }

  /**
   * Deletes the files of these jobs that no job or dead letter references any more: after an
   * explicit removal (`removeJob`, `purgeDeadLetters`), at once rather than at the next sweep.
   */
  async deleteUnreferenced(jobIds: ObjectId[]): Promise<number> {
    if (jobIds.length === 0) return 0;
    const files = await this.files.find({ 'metadata.jobId': { $in: jobIds } }, { projection: { _id: 1, 'metadata.jobId': 1 } }).toArray();
    return this.deleteOrphans(files, undefined);
  }

  /**
   * The orphan sweep (`MongoStore.maintain`): files whose check is due (`metadata.checkAt <= now`,
   * which starts {@link ORPHAN_GRACE_MS} after the upload) are deleted when no job or dead letter
   * references them, and checked again {@link RECHECK_MS} later otherwise. Resolves how many it deleted.
   */
  async sweep(now: Date): Promise<number> {
    let deleted = 0;
    for (let round = 0; round < SWEEP_ROUNDS; round++) {
      const due = await this.files
        .find({ 'metadata.checkAt': { $lte: now } }, { projection: { _id: 1, 'metadata.jobId': 1 }, limit: SWEEP_BATCH, hint: FILES_CHECK_INDEX })
        .toArray();
      deleted += await this.deleteOrphans(due, new Date(now.getTime() + RECHECK_MS));
      if (due.length < SWEEP_BATCH) break;
    }
    return deleted;
  }

  /** Deletes those of `files` no job references; the others get their next check at `recheckAt`, when given. */
  private async deleteOrphans(files: Pick<ValueFileDocument, '_id' | 'metadata'>[], recheckAt: Date | undefined): Promise<number> {
    if (files.length === 0) return 0;
    const jobIds = [...new Map(files.map((f) => [f.metadata.jobId.toHexString(), f.metadata.jobId])).values()];
    const [live, dead] = await Promise.all([
      this.jobs()
        .find({ _id: { $in: jobIds } }, { projection: { _id: 0, 'payloadRef.fileId': 1, 'resultRef.fileId': 1 } })
        .toArray(),
      this.deadLetters.find({ _id: { $in: jobIds } }, { projection: { _id: 0, 'job.payloadRef.fileId': 1, 'job.resultRef.fileId': 1 } }).toArray(),
    ]);
    const referenced = new Set<string>();
    for (const doc of [...live, ...dead.map((d) => d.job)]) {
      if (doc.payloadRef) referenced.add(doc.payloadRef.fileId.toHexString());
      if (doc.resultRef) referenced.add(doc.resultRef.fileId.toHexString());
    }
    const orphans = files.filter((f) => !referenced.has(f._id.toHexString())).map((f) => f._id);
    await this.deleteFiles(orphans);
    const kept = files.filter((f) => referenced.has(f._id.toHexString())).map((f) => f._id);
    if (recheckAt && kept.length > 0) await this.files.updateMany({ _id: { $in: kept } }, { $set: { 'metadata.checkAt': recheckAt } });
    return orphans.length;
  }
}
