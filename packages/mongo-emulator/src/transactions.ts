/**
 * Logical sessions and multi-document transactions. A transaction keeps its writes in a private
 * overlay (reads in the transaction see them; nobody else does), locks each document it writes,
 * and applies everything at commit in one synchronous step, so other clients see all of it or
 * none of it. Writing a document that another transaction holds, or that someone committed after
 * this transaction started, is a WriteConflict (112) labelled TransientTransactionError, which
 * makes `withTransaction` retry. Reads see the committed state as of the transaction's first
 * operation (pre-images of later commits are kept while it is open) plus its own writes.
 */
import { createHash } from 'node:crypto';
import { Binary, Long } from 'bson';
import { CommandError } from './errors.js';
import { valueKey } from './bson-order.js';
import type { Catalog } from './storage/catalog.js';
import type { StoredRecord } from './storage/collection.js';
import type { IndexSpec } from './storage/index-spec.js';
import { IndexTable } from './storage/index-table.js';
import type { Doc } from './values.js';
import type { TransactionId, WriteRecorder, WriteOp } from './write-op.js';
import { SnapshotHistory } from './snapshot-history.js';

/**
 * The `uid` mongod gives a session when authentication is off (logical_session_id_helpers.cpp,
 * kNoAuthDigest: the SHA-256 of nothing); the driver sends only `lsid.id`.
 */
const NO_AUTH_DIGEST = new Binary(createHash('sha256').digest(), 0);

/** mongod's transactionLifetimeLimitSeconds default: an abandoned transaction is aborted. */
const TRANSACTION_LIFETIME_MS = 60_000;

function addOwnKeys(keys: Map<string, Set<string>>, index: IndexTable, doc: Doc, idKey: string): void {
  for (const key of index.keysOf(doc)) {
    const id = IndexTable.keyId(key);
    let owners = keys.get(id);
    if (!owners) keys.set(id, (owners = new Set()));
    owners.add(idKey);
  }
}

function removeOwnKeys(keys: Map<string, Set<string>>, index: IndexTable, doc: Doc, idKey: string): void {
  for (const key of index.keysOf(doc)) {
    const id = IndexTable.keyId(key);
    const owners = keys.get(id);
    owners?.delete(idKey);
    if (owners?.size === 0) keys.delete(id);
  }
}

export class Transaction {
  state: 'active' | 'committed' | 'aborted' = 'active';
  /** ns -> idKey -> the document as this transaction sees it (null: deleted). */
  readonly overlays = new Map<string, Map<string, Doc | null>>();
  readonly ops: WriteOp[] = [];
  readonly locks = new Set<string>();
  /**
   * Collections this transaction creates (create, or createIndexes on a missing collection, both
   * allowed in transactions since 4.4): invisible to others until the commit makes them.
   */
  readonly created = new Map<string, { options: Doc; indexes: IndexSpec[] }>();
  /**
   * Each namespace this transaction used (read or written), with the UUID its collection had
   * then (undefined: missing). On mongod a transaction holds its collection locks until it ends,
   * so a drop waits for it (see SessionRegistry.holders); the commit checks the UUIDs again so its
   * writes never land in another collection of the same name.
   */
  readonly namespaces = new Map<string, unknown>();
  readonly done: Promise<void>;
  private finish!: () => void;
  private lifetime?: NodeJS.Timeout;

  constructor(
    readonly sessionKey: string,
    readonly txnNumber: number,
    readonly startVersion: number,
    onExpire: () => void,
    /** The session as mongod reports it in the transaction's change events. */
    private readonly lsid: Doc = {},
  ) {
    this.done = new Promise((resolve) => (this.finish = resolve));
    this.lifetime = setTimeout(onExpire, TRANSACTION_LIFETIME_MS);
    this.lifetime.unref?.();
  }

  /**
   * Per namespace and unique index, the keys of this transaction's own documents (key id →
   * idKeys): built from the overlay on first use, then kept current by {@link write}, so checking a
   * write against the transaction's earlier ones costs a lookup, not a pass over all of them.
   */
  private readonly ownKeys = new Map<string, Map<IndexTable, Map<string, Set<string>>>>();

  /** The keys of this transaction's own documents of `ns` in `index` (see ownKeys). */
  ownUniqueKeys(ns: string, index: IndexTable): ReadonlyMap<string, ReadonlySet<string>> {
    let byIndex = this.ownKeys.get(ns);
    if (!byIndex) {
      byIndex = new Map<IndexTable, Map<string, Set<string>>>();
      this.ownKeys.set(ns, byIndex);
    }
    let keys = byIndex.get(index);
    if (!keys) {
      keys = new Map<string, Set<string>>();
      for (const [idKey, doc] of this.overlay(ns)) if (doc) addOwnKeys(keys, index, doc, idKey);
      byIndex.set(index, keys);
    }
    return keys;
  }

  /** Writes (null: deletes) one document of the transaction's overlay of `ns`. */
  write(ns: string, idKey: string, doc: Doc | null): void {
    const overlay = this.overlay(ns);
    const before = overlay.get(idKey);
    for (const [index, keys] of this.ownKeys.get(ns) ?? []) {
      if (before) removeOwnKeys(keys, index, before, idKey);
      if (doc) addOwnKeys(keys, index, doc, idKey);
    }
    overlay.set(idKey, doc);
  }

  overlay(ns: string): Map<string, Doc | null> {
    let o = this.overlays.get(ns);
    if (!o) {
      o = new Map();
      this.overlays.set(ns, o);
    }
    return o;
  }

  /** lsid (`id` and `uid`) and txnNumber, which every change event of this transaction carries. */
  get id(): TransactionId {
    return { lsid: { id: this.lsid.id, uid: this.lsid.uid ?? NO_AUTH_DIGEST }, txnNumber: Long.fromNumber(this.txnNumber) };
  }

  end(state: 'committed' | 'aborted'): void {
    this.state = state;
    clearTimeout(this.lifetime);
    this.finish();
  }
}

/** The statements of one retryable write (a txnNumber outside a transaction) that already ran. */
export class RetryableWrite {
  /** Statement index -> its recorded result; a retry returns it instead of writing again. */
  private readonly results = new Map<number, unknown>();

  constructor(readonly txnNumber: number) {}

  result(stmt: number): unknown {
    return this.results.get(stmt);
  }

  record(stmt: number, result: unknown): void {
    this.results.set(stmt, result);
  }
}

interface SessionState {
  txn?: Transaction;
  retryable?: RetryableWrite;
  /** Wall-clock time (ms) of the last command (for $listLocalSessions). */
  lastUse: number;
  lsid: Doc;
}

/** Session keys by lsid object (each command's body has its own, so this lives as long as the command). */
const SESSION_KEYS = new WeakMap<object, string>();

function lockKey(ns: string, idKey: string): string {
  return `${ns}\u0000${idKey}`;
}

export function writeConflict(): CommandError {
  return new CommandError(
    'WriteConflict',
    'Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.',
    { labels: ['TransientTransactionError'] },
  );
}

/** `ns` lies in `scope`: one collection (`db.coll`), or a whole database (`db.`; names of databases have no dot). */
function inScope(ns: string, scope: string): boolean {
  return scope.endsWith('.') ? ns.startsWith(scope) : ns === scope;
}

export class SessionRegistry {
  private readonly sessions = new Map<string, SessionState>();
  /** Scopes (see inScope) that a drop is waiting to take, with how many drops wait for each. */
  private readonly pendingDrops = new Map<string, number>();
  private readonly locks = new Map<string, Transaction>();
  private readonly active = new Set<Transaction>();
  private readonly history = new SnapshotHistory();

  /** Records a committed change for the snapshots of open transactions (a no-op when none is open). */
  noteChange(ns: string, idKey: string, before: Doc | null, version: number): void {
    if (this.active.size > 0) this.history.note(ns, idKey, before, version);
  }

  /** Documents of `ns` as `txn`'s snapshot saw them, where later commits changed them. */
  snapshotChanges(txn: Transaction, ns: string): Map<string, Doc | null> {
    return this.history.asOf(ns, txn.startVersion);
  }

  private finished(txn: Transaction): void {
    this.active.delete(txn);
    let oldest: number | undefined;
    for (const t of this.active) oldest = oldest === undefined ? t.startVersion : Math.min(oldest, t.startVersion);
    this.history.prune(oldest);
  }

  constructor(
    private readonly catalog: Catalog,
    private readonly recorder: WriteRecorder,
  ) {}

  /** The session's state, created on first use of its lsid. */
  private session(lsid: unknown): SessionState {
    const key = SessionRegistry.sessionKey(lsid);
    let session = this.sessions.get(key);
    if (!session) {
      session = { lastUse: Date.now(), lsid: lsid as Doc };
      this.sessions.set(key, session);
    }
    return session;
  }

  /** Notes that a command used this session (mongod keeps a cache of sessions in use). */
  touch(lsid: unknown): void {
    this.session(lsid).lastUse = Date.now();
  }

  /** Sessions in this server's cache, as $listLocalSessions reports them. */
  localSessions(): Doc[] {
    return [...this.sessions.values()].map((s) => ({ _id: s.lsid, lastUse: new Date(s.lastUse) }));
  }

  /**
   * The record of a retryable write: the same txnNumber again is a retry (statements that ran
   * are not run again), a lower one is refused as mongod refuses it.
   */
  retryableWrite(lsid: unknown, txnNumber: number): RetryableWrite {
    const session = this.session(lsid);
    const newest = Math.max(session.retryable?.txnNumber ?? -1, session.txn?.txnNumber ?? -1);
    if (txnNumber < newest) {
      throw new CommandError(
        'TransactionTooOld',
        `Retryable write with txnNumber ${txnNumber} is prohibited on session ${SessionRegistry.sessionKey(lsid)} because a newer retryable write with txnNumber ${newest} has already started on this session.`,
      );
    }
    if (session.retryable?.txnNumber !== txnNumber) session.retryable = new RetryableWrite(txnNumber);
    return session.retryable;
  }

  static sessionKey(lsid: unknown): string {
    const id = (lsid as { id?: unknown } | undefined)?.id;
    if (id === undefined) throw new CommandError('BadValue', 'lsid.id is required');
    // A command asks for its lsid's key several times (dispatch, retryable write, transaction).
    const known = typeof lsid === 'object' && lsid !== null ? SESSION_KEYS.get(lsid) : undefined;
    if (known !== undefined) return known;
    const key = valueKey(id);
    if (typeof lsid === 'object' && lsid !== null) SESSION_KEYS.set(lsid, key);
    return key;
  }

  /** The transaction a command runs in, following the driver's startTransaction/txnNumber protocol. */
  resolve(body: Doc, commandName: string): Transaction | undefined {
    if (body.autocommit === undefined) return undefined; // a retryable write, not a transaction
    if (body.autocommit !== false) throw new CommandError('InvalidOptions', 'Specifying autocommit=true is not allowed.');
    const sessionKey = SessionRegistry.sessionKey(body.lsid);
    const txnNumber = Number(body.txnNumber);
    const session = this.session(body.lsid);
    if (body.startTransaction === true) {
      if (session.txn && session.txn.txnNumber >= txnNumber) {
        throw new CommandError(
          'BadValue',
          `Cannot start transaction ${txnNumber} on session: a transaction with number ${session.txn.txnNumber} was already started`,
        );
      }
      if (session.txn?.state === 'active') this.abort(session.txn);
      const txn: Transaction = new Transaction(sessionKey, txnNumber, this.catalog.version, () => this.abort(txn), body.lsid as Doc);
      session.txn = txn;
      this.active.add(txn);
      return txn;
    }
    const txn = session.txn;
    if (!txn || txn.txnNumber !== txnNumber || txn.state === 'aborted') {
      throw new CommandError('NoSuchTransaction', `Transaction with { txnNumber: ${txnNumber} } has been aborted.`, {
        labels: ['TransientTransactionError'],
      });
    }
    if (txn.state === 'committed' && commandName !== 'commitTransaction') {
      throw new CommandError('TransactionCommitted', `Transaction with { txnNumber: ${txnNumber} } has been committed.`);
    }
    return txn;
  }

  /**
   * Notes that `txn` uses namespace `ns`, whose collection now has `uuid`. The first use while a
   * drop waits for that namespace fails: on mongod the drop's pending exclusive lock queues new
   * lock requests, and a transaction waits only maxTransactionLockRequestTimeoutMillis (5 ms) for a
   * lock before it aborts with LockTimeout (24), labelled TransientTransactionError ("Production
   * Considerations: DDL Operations" in the MongoDB manual).
   */
  use(txn: Transaction, ns: string, uuid: unknown): void {
    if (txn.namespaces.has(ns)) return;
    for (const scope of this.pendingDrops.keys()) {
      // A transaction already holding the database (dropDatabase waits for it) takes more of
      // its collections: on mongod its database intent lock is already granted.
      if (!inScope(ns, scope) || this.holds(txn, scope)) continue;
      this.abort(txn);
      throw new CommandError(
        'LockTimeout',
        `Unable to acquire IX lock on '${ns}' within 5ms: a drop is waiting for that collection (maxTransactionLockRequestTimeoutMillis)`,
        {
          labels: ['TransientTransactionError'],
        },
      );
    }
    txn.namespaces.set(ns, uuid);
  }

  /**
   * Open transactions that used a namespace of `scope` (a collection `db.coll`, or a database
   * `db.`): on mongod they hold a lock on it that a drop's exclusive lock waits for.
   */
  holders(scope: string): Transaction[] {
    return [...this.active].filter((txn) => txn.state === 'active' && this.holds(txn, scope));
  }

  private holds(txn: Transaction, scope: string): boolean {
    for (const ns of txn.namespaces.keys()) if (inScope(ns, scope)) return true;
    return false;
  }

  /**
   * Waits until no open transaction holds `scope` (each one committed or aborted), with `wait`
   * bounding each wait by the drop's maxTimeMS. While it waits, transactions that were not yet
   * using the scope cannot start to (see use).
   */
  async waitForHolders(scope: string, wait: (until: Promise<void>) => Promise<void>): Promise<void> {
    for (let holders = this.holders(scope); holders.length > 0; holders = this.holders(scope)) {
      this.pendingDrops.set(scope, (this.pendingDrops.get(scope) ?? 0) + 1);
      try {
        await wait(Promise.all(holders.map((t) => t.done)).then(() => undefined));
      } finally {
        const left = (this.pendingDrops.get(scope) ?? 1) - 1;
        if (left > 0) this.pendingDrops.set(scope, left);
        else this.pendingDrops.delete(scope);
      }
    }
  }

  /** The transaction holding a document's write lock, if any. */
  lockOwner(ns: string, idKey: string): Transaction | undefined {
    return this.locks.get(lockKey(ns, idKey));
  }

  /** Takes the write lock for `txn`, or fails the transaction with a WriteConflict. */
  lock(txn: Transaction, ns: string, idKey: string, base: StoredRecord | undefined): void {
    const key = lockKey(ns, idKey);
    const owner = this.locks.get(key);
    if (owner === txn) return;
    if (owner || (base && base.version > txn.startVersion) || this.history.changedAfter(ns, idKey, txn.startVersion)) {
      this.abort(txn);
      throw writeConflict();
    }
    this.locks.set(key, txn);
    txn.locks.add(key);
  }

  abort(txn: Transaction): void {
    if (txn.state !== 'active') return;
    this.release(txn);
    txn.end('aborted');
    this.finished(txn);
  }

  private release(txn: Transaction): void {
    for (const key of txn.locks) if (this.locks.get(key) === txn) this.locks.delete(key);
    txn.locks.clear();
  }

  /**
   * Applies the overlay atomically: every touched document is taken out, then every final
   * version put back, so swaps of unique values between documents never collide midway. Any
   * failure restores the prior state exactly and aborts the transaction.
   */
  commit(txn: Transaction): void {
    if (txn.state === 'committed') return;
    const removed: { coll: NonNullable<ReturnType<Catalog['get']>>; record: StoredRecord }[] = [];
    const inserted: { coll: NonNullable<ReturnType<Catalog['get']>>; record: StoredRecord }[] = [];
    const version = this.catalog.version + 1;
    const createdColls: [string, string][] = [];
    try {
      for (const [ns, { options, indexes }] of txn.created) {
        const [db, name] = splitNs(ns);
        // Someone else created it meanwhile: the catalog changed under this transaction.
        if (this.catalog.get(db, name)) throw writeConflict();
        const { coll } = this.catalog.getOrCreate(db, name, options);
        createdColls.push([db, name]);
        for (const spec of indexes) coll.addIndex(spec);
      }
      for (const [ns, overlay] of txn.overlays) {
        const [db, name] = splitNs(ns);
        const coll = this.catalog.get(db, name);
        // The collection it wrote to was dropped (or renamed away) since: never write into a
        // collection created after that under the same name. Drops wait for open transactions,
        // so only a catalog change the emulator does not make wait gets here.
        const seen = txn.namespaces.get(ns);
        if (overlay.size > 0 && seen !== undefined && seen !== coll?.uuid) throw writeConflict();
        if (!coll) continue;
        for (const idKey of overlay.keys()) {
          const record = coll.getByIdKey(idKey);
          if (record) {
            coll.remove(record);
            removed.push({ coll, record });
          }
        }
      }
      for (const [ns, overlay] of txn.overlays) {
        const [db, name] = splitNs(ns);
        for (const [idKey, doc] of overlay) {
          if (!doc) continue;
          const { coll } = this.catalog.getOrCreate(db, name);
          const prior = removed.find((r) => r.coll === coll && r.record.idKey === idKey)?.record;
          const record = coll.insert(doc, version, prior?.rid);
          inserted.push({ coll, record });
        }
      }
    } catch (err) {
      for (const { coll, record } of inserted.reverse()) coll.remove(record);
      for (const { coll, record } of removed.reverse()) coll.insert(record.doc, record.version, record.rid);
      for (const [db, name] of createdColls) this.catalog.drop(db, name);
      this.abort(txn);
      throw err;
    }
    this.catalog.version = version;
    this.active.delete(txn);
    for (const { coll, record } of removed) this.noteChange(coll.ns, record.idKey, record.doc, version);
    for (const { coll, record } of inserted) {
      if (!removed.some((r) => r.coll === coll && r.record.idKey === record.idKey)) this.noteChange(coll.ns, record.idKey, null, version);
    }
    const id = txn.id;
    for (const op of txn.ops) this.recorder.record({ ...op, txn: id });
    this.release(txn);
    txn.end('committed');
    this.finished(txn);
  }

  /** endSessions: abort whatever those sessions left open and forget them. */
  end(lsids: unknown[]): void {
    for (const lsid of lsids) {
      const key = SessionRegistry.sessionKey(lsid);
      const txn = this.sessions.get(key)?.txn;
      if (txn) this.abort(txn);
      this.sessions.delete(key);
    }
  }

  /**
   * killSessions: aborts the open transaction of each of those sessions (all sessions when the list
   * is empty), as mongod does for a client that died inside one and would otherwise hold its locks
   * until transactionLifetimeLimitSeconds. Unlike endSessions the sessions stay known: a later
   * command of the killed transaction gets NoSuchTransaction. (mongod also interrupts the sessions'
   * running operations; here a session's command runs to its end before the next one is read.)
   */
  kill(lsids: unknown[]): void {
    if (lsids.length === 0) {
      this.abortAll();
      return;
    }
    for (const lsid of lsids) {
      const txn = this.sessions.get(SessionRegistry.sessionKey(lsid))?.txn;
      if (txn) this.abort(txn);
    }
  }

  /** Aborts every open transaction; returns how many were open. */
  abortAll(): number {
    let open = 0;
    for (const s of this.sessions.values()) {
      if (s.txn?.state !== 'active') continue;
      open++;
      this.abort(s.txn);
    }
    return open;
  }
}

export function splitNs(ns: string): [string, string] {
  const dot = ns.indexOf('.');
  return [ns.slice(0, dot), ns.slice(dot + 1)];
}
