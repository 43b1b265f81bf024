/**
 * One collection's committed documents and its indexes. Each write is atomic for its document:
 * every unique constraint is checked before anything changes, so a duplicate key leaves the
 * collection exactly as it was.
 */
import { UUID } from 'bson';
import { CommandError } from '../errors.js';
import { valueKey } from '../bson-order.js';
import { formatDoc, type Doc } from '../values.js';
import { ID_INDEX, type IndexSpec } from './index-spec.js';
import { IndexTable } from './index-table.js';

export interface StoredRecord {
  rid: number;
  idKey: string;
  doc: Doc;
  /** The database-wide write version that last changed this document. */
  version: number;
}

let nextRid = 1;

/** Per unique index, the keys of documents not in the collection yet (key id → their idKeys). */
export type PendingKeys = (index: IndexTable) => ReadonlyMap<string, ReadonlySet<string>>;

export class CollectionData {
  readonly records = new Map<number, StoredRecord>();
  private readonly byId = new Map<string, StoredRecord>();
  readonly indexes = new Map<string, IndexTable>();
  readonly options: Doc;
  /** The collection's UUID, as listCollections and change events report it. */
  readonly uuid = new UUID();

  constructor(
    /** Not readonly: renameCollection moves a collection, documents and indexes alike. */
    public db: string,
    public name: string,
    options: Doc = {},
  ) {
    this.options = options;
    this.indexes.set(ID_INDEX.name, new IndexTable(ID_INDEX));
  }

  get ns(): string {
    return `${this.db}.${this.name}`;
  }

  get size(): number {
    return this.records.size;
  }

  getById(id: unknown): StoredRecord | undefined {
    return this.byId.get(valueKey(id));
  }

  getByIdKey(idKey: string): StoredRecord | undefined {
    return this.byId.get(idKey);
  }

  /**
   * Throws DuplicateKey if `doc` would collide with another document in a unique index.
   * `ignore` lists document ids (as idKeys) whose index entries do not count (the document
   * being replaced, or documents a transaction has overlaid). `pending` gives, per unique index,
   * the keys of more documents to check against (a transaction's own writes: key id → idKeys).
   */
  checkUnique(doc: Doc, selfIdKey: string, ignore?: (idKey: string) => boolean, pending?: PendingKeys): void {
    for (const index of this.indexes.values()) {
      if (index.spec.unique) this.checkUniqueKeys(index, index.keysOf(doc), selfIdKey, ignore, pending);
    }
  }

  private checkUniqueKeys(index: IndexTable, keys: unknown[][], selfIdKey: string, ignore?: (idKey: string) => boolean, pending?: PendingKeys): void {
    for (const key of keys) {
      for (const rid of index.ridsWithKey(key)) {
        const other = this.records.get(rid);
        if (!other || other.idKey === selfIdKey || ignore?.(other.idKey)) continue;
        throw duplicateKeyError(this.ns, index.spec, key);
      }
      const owners = pending?.(index).get(IndexTable.keyId(key));
      if (owners) for (const owner of owners) if (owner !== selfIdKey) throw duplicateKeyError(this.ns, index.spec, key);
    }
  }

  insert(doc: Doc, version: number, rid?: number): StoredRecord {
    const idKey = valueKey(doc._id);
    if (this.byId.has(idKey)) throw duplicateKeyError(this.ns, ID_INDEX, [doc._id]);
    this.checkUnique(doc, idKey);
    const record: StoredRecord = { rid: rid ?? nextRid++, idKey, doc, version };
    this.addToIndexes(doc, record.rid);
    this.records.set(record.rid, record);
    this.byId.set(idKey, record);
    return record;
  }

  /** `changed`, when known, lists the paths an update changed: indexes on none of them are skipped. */
  replace(record: StoredRecord, doc: Doc, version: number, changed?: readonly string[]): void {
    // Only indexes whose keys change are checked and touched (a claim changes one or two).
    const changes: { index: IndexTable; before: unknown[][]; after: ReturnType<IndexTable['extract']> }[] = [];
    for (const index of this.indexes.values()) {
      if (changed && !index.dependsOn(changed)) continue;
      const before = index.keysOf(record.doc);
      const after = index.extract(doc);
      if (!index.sameKeys(before, after.keys)) changes.push({ index, before, after });
    }
    for (const { index, after } of changes) {
      if (index.spec.unique) this.checkUniqueKeys(index, after.keys, record.idKey);
    }
    for (const { index, before, after } of changes) {
      index.removeKeys(before, record.rid);
      index.addKeys(after, record.rid);
    }
    record.doc = doc;
    record.version = version;
  }

  remove(record: StoredRecord): void {
    for (const index of this.indexes.values()) index.remove(record.doc, record.rid);
    this.records.delete(record.rid);
    this.byId.delete(record.idKey);
  }

  /** Adds to every index, undoing partial work if key extraction fails (parallel arrays). */
  private addToIndexes(doc: Doc, rid: number): void {
    const done: IndexTable[] = [];
    try {
      for (const index of this.indexes.values()) {
        index.add(doc, rid);
        done.push(index);
      }
    } catch (err) {
      for (const index of done) index.remove(doc, rid);
      throw err;
    }
  }

  /** Builds a new index over existing documents; fails without side effects on duplicates. */
  addIndex(spec: IndexSpec): void {
    const table = new IndexTable(spec);
    const seen = new Map<string, true>();
    for (const record of this.records.values()) {
      if (spec.unique) {
        for (const key of table.keysOf(record.doc)) {
          const id = IndexTable.keyId(key);
          if (seen.has(id)) throw duplicateKeyError(this.ns, spec, key);
          seen.set(id, true);
        }
      }
      table.add(record.doc, record.rid);
    }
    this.indexes.set(spec.name, table);
  }
}

/** mongod's E11000 shape, with keyPattern and keyValue. */
export function duplicateKeyError(ns: string, spec: IndexSpec, key: unknown[]): CommandError {
  const keyValue: Doc = {};
  const keyPattern: Doc = {};
  spec.fields.forEach((f, i) => {
    keyPattern[f] = spec.directions[i];
    keyValue[f] = key[i];
  });
  return new CommandError('DuplicateKey', `E11000 duplicate key error collection: ${ns} index: ${spec.name} dup key: ${formatDoc(keyValue)}`, {
    extra: { keyPattern, keyValue },
  });
}
