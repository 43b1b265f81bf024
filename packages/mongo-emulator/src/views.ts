/**
 * What a command sees of one collection: the committed data (autocommit) or the committed data
 * under a transaction's overlay. Commands read and write only through this interface.
 */
import { CommandError, LockWait } from './errors.js';
import { valueKey } from './bson-order.js';
import type { Catalog } from './storage/catalog.js';
import type { CollectionData } from './storage/collection.js';
import { ID_INDEX } from './storage/index-spec.js';
import { duplicateKeyError } from './storage/collection.js';
import { planCandidates } from './query/planner.js';
import { sortComparator, type SortSpec } from './query/sort.js';
import type { SessionRegistry, Transaction } from './transactions.js';
import type { WriteRecorder } from './write-op.js';
import { isPlainObject, type Doc } from './values.js';

export interface Item {
  idKey: string;
  doc: Doc;
}

export interface CandidateStream {
  items: Iterable<Item>;
  sortedPrefix: number;
  plan: string;
}

export interface CollectionView {
  readonly db: string;
  readonly name: string;
  readonly ns: string;
  /** The committed collection (indexes, options), if it exists. */
  collection(): CollectionData | undefined;
  candidates(filter: Doc, sort: SortSpec, hint?: unknown): CandidateStream;
  get(id: unknown): Item | undefined;
  /** Checks, before a statement changes anything, that these documents can be written. */
  reserve(items: Item[]): void;
  insert(doc: Doc): void;
  /** `changed`: the paths an operator update changed, when known (indexes on none of them are left alone). */
  update(item: Item, after: Doc, kind: 'update' | 'replace', changed?: readonly string[]): void;
  remove(item: Item): void;
}

/** Whether documents equal to `v` (as an `_id`) are exactly those whose idKey is `valueKey(v)`. */
function isPlainIdValue(v: unknown): boolean {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return true;
  return v instanceof Date || (typeof v === 'object' && v !== null && (v as { _bsontype?: unknown })._bsontype === 'ObjectId');
}

/**
 * The idKeys of the only documents a filter can match, when its `_id` condition names them
 * (`_id: v`, `{ $eq: v }`, `{ $in: [...] }` of plain values); undefined otherwise.
 */
function namedIds(filter: Doc): string[] | undefined {
  const cond = filter._id;
  if (cond === undefined) return undefined;
  if (isPlainIdValue(cond)) return [valueKey(cond)];
  if (!isPlainObject(cond)) return undefined;
  const ops = Object.keys(cond);
  if (ops.length !== 1) return undefined;
  if (ops[0] === '$eq' && isPlainIdValue(cond.$eq)) return [valueKey(cond.$eq)];
  if (ops[0] === '$in' && Array.isArray(cond.$in) && cond.$in.every(isPlainIdValue)) return cond.$in.map(valueKey);
  return undefined;
}

const EMPTY: CandidateStream = { items: [], sortedPrefix: Number.MAX_SAFE_INTEGER, plan: 'EOF' };

export class CommittedView implements CollectionView {
  readonly ns: string;

  constructor(
    private readonly catalog: Catalog,
    private readonly sessions: SessionRegistry,
    private readonly recorder: WriteRecorder,
    readonly db: string,
    readonly name: string,
  ) {
    this.ns = `${db}.${name}`;
  }

  collection(): CollectionData | undefined {
    return this.catalog.get(this.db, this.name);
  }

  candidates(filter: Doc, sort: SortSpec, hint?: unknown): CandidateStream {
    const coll = this.collection();
    return coll ? planCandidates(coll, filter, sort, hint) : EMPTY;
  }

  get(id: unknown): Item | undefined {
    return this.collection()?.getById(id);
  }

  reserve(items: Item[]): void {
    for (const item of items) {
      const owner = this.sessions.lockOwner(this.ns, item.idKey);
      if (owner) throw new LockWait(owner.done);
    }
  }

  insert(doc: Doc): void {
    this.reserve([{ idKey: valueKey(doc._id), doc }]);
    const { coll } = this.catalog.getOrCreate(this.db, this.name);
    const version = this.catalog.version + 1;
    const record = coll.insert(doc, version);
    this.catalog.version = version;
    this.sessions.noteChange(this.ns, record.idKey, null, version);
    this.recorder.record({ kind: 'insert', db: this.db, coll: this.name, after: doc });
  }

  update(item: Item, after: Doc, kind: 'update' | 'replace', changed?: readonly string[]): void {
    this.reserve([item]);
    const coll = this.collection();
    const record = coll?.getByIdKey(item.idKey);
    if (!coll || !record) throw new CommandError('InternalError', `document ${item.idKey} vanished during update`);
    const version = this.catalog.version + 1;
    const before = record.doc;
    coll.replace(record, after, version, changed);
    this.catalog.version = version;
    this.sessions.noteChange(this.ns, record.idKey, before, version);
    this.recorder.record({ kind, db: this.db, coll: this.name, before, after });
  }

  remove(item: Item): void {
    this.reserve([item]);
    const coll = this.collection();
    const record = coll?.getByIdKey(item.idKey);
    if (!coll || !record) return;
    coll.remove(record);
    this.catalog.version++;
    this.sessions.noteChange(this.ns, record.idKey, record.doc, this.catalog.version);
    this.recorder.record({ kind: 'delete', db: this.db, coll: this.name, before: record.doc });
  }
}

export class TransactionView implements CollectionView {
  readonly ns: string;
  private readonly overlay: Map<string, Doc | null>;

  constructor(
    private readonly catalog: Catalog,
    private readonly sessions: SessionRegistry,
    private readonly txn: Transaction,
    readonly db: string,
    readonly name: string,
  ) {
    this.ns = `${db}.${name}`;
    sessions.use(txn, this.ns, catalog.get(db, name)?.uuid);
    this.overlay = txn.overlay(this.ns);
  }

  collection(): CollectionData | undefined {
    return this.catalog.get(this.db, this.name);
  }

  /** The transaction's own writes over its snapshot's view of documents committed since. */
  private visibleOverlay(): Map<string, Doc | null> {
    const snapshot = this.sessions.snapshotChanges(this.txn, this.ns);
    if (snapshot.size === 0) return this.overlay;
    for (const [idKey, doc] of this.overlay) snapshot.set(idKey, doc);
    return snapshot;
  }

  candidates(filter: Doc, sort: SortSpec, hint?: unknown): CandidateStream {
    const coll = this.collection();
    const base = coll ? planCandidates(coll, filter, sort, hint) : EMPTY;
    const overlay = this.visibleOverlay();
    const own: Item[] = [];
    // A filter naming its _ids (most of a transaction's writes) need not test every document the
    // transaction wrote: with hundreds of them, that made each write cost as many tests.
    const ids = namedIds(filter);
    if (ids) {
      for (const idKey of ids) {
        const doc = overlay.get(idKey);
        if (doc) own.push({ idKey, doc });
      }
    } else for (const [idKey, doc] of overlay) if (doc) own.push({ idKey, doc });
    if (own.length === 0 && overlay.size === 0) return base;
    const compareFull = sortComparator(sort);
    own.sort((a, b) => compareFull(a.doc, b.doc));
    const prefix = Math.min(base.sortedPrefix, sort.length);
    const compare = sortComparator(sort, prefix);
    function* merged(): Generator<Item> {
      let i = 0;
      for (const item of base.items) {
        if (overlay.has(item.idKey)) continue;
        while (prefix > 0 && i < own.length && compare(own[i].doc, item.doc) < 0) yield own[i++];
        yield item;
      }
      while (i < own.length) yield own[i++];
    }
    return { items: { [Symbol.iterator]: merged }, sortedPrefix: prefix, plan: `${base.plan}+TXN` };
  }

  get(id: unknown): Item | undefined {
    const idKey = valueKey(id);
    const overlay = this.visibleOverlay();
    if (overlay.has(idKey)) {
      const doc = overlay.get(idKey);
      return doc ? { idKey, doc } : undefined;
    }
    return this.collection()?.getByIdKey(idKey);
  }

  reserve(items: Item[]): void {
    const coll = this.collection();
    for (const item of items) this.sessions.lock(this.txn, this.ns, item.idKey, coll?.getByIdKey(item.idKey));
  }

  private checkUnique(doc: Doc, idKey: string): void {
    // Without a collection there is no index but _id's, which insert checks through get().
    this.collection()?.checkUnique(
      doc,
      idKey,
      (other) => this.overlay.has(other),
      (index) => this.txn.ownUniqueKeys(this.ns, index),
    );
  }

  insert(doc: Doc): void {
    const idKey = valueKey(doc._id);
    const existing = this.get(doc._id);
    if (existing) throw duplicateKeyError(this.ns, ID_INDEX, [doc._id]);
    this.reserve([{ idKey, doc }]);
    this.checkUnique(doc, idKey);
    this.txn.write(this.ns, idKey, doc);
    this.txn.ops.push({ kind: 'insert', db: this.db, coll: this.name, after: doc });
  }

  update(item: Item, after: Doc, kind: 'update' | 'replace'): void {
    this.reserve([item]);
    this.checkUnique(after, item.idKey);
    this.txn.write(this.ns, item.idKey, after);
    this.txn.ops.push({ kind, db: this.db, coll: this.name, before: item.doc, after });
  }

  remove(item: Item): void {
    this.reserve([item]);
    this.txn.write(this.ns, item.idKey, null);
    this.txn.ops.push({ kind: 'delete', db: this.db, coll: this.name, before: item.doc });
  }
}
