/**
 * The state one emulator serves: catalog, change log, sessions, cursors and its clock. Commands
 * reach documents only through views from here, so transactions and change events stay uniform.
 */
import { Catalog } from './storage/catalog.js';
import { ChangeLog, describeUpdate } from './change-log.js';
import { CursorRegistry } from './cursors.js';
import { SessionRegistry, type Transaction } from './transactions.js';
import { CommittedView, TransactionView, type CollectionView } from './views.js';
import type { EmulatorClock } from './clock.js';
import type { WriteOp, WriteRecorder } from './write-op.js';
import { LogicalClock } from './cluster-time.js';
import { FailPoints } from './failpoints.js';
import { ReplState, interruptedByStepDown } from './repl-state.js';
import { ChangeStreamSource } from './change-stream.js';
import type { ShardRouter } from './sharding/router.js';

export interface EngineOptions {
  clock: EmulatorClock;
  /** Replica set name; undefined runs as a standalone server. */
  replicaSet?: string;
}

export class Engine implements WriteRecorder {
  readonly catalog = new Catalog();
  readonly changeLog: ChangeLog;
  readonly sessions: SessionRegistry;
  readonly cursors = new CursorRegistry();
  readonly clock: EmulatorClock;
  readonly replicaSet?: string;
  readonly startedAt = new Date();
  /** host:port as clients address this server (set once listening). */
  host = '127.0.0.1:0';
  readonly counts = new Map<string, number>();
  readonly logicalClock: LogicalClock;
  readonly failPoints = new FailPoints();
  /** PRIMARY, or SECONDARY during a step-down (replica-set mode). */
  readonly repl = new ReplState();
  /** The application name each connection sent in its handshake (failCommand's appName filter). */
  readonly appNames = new Map<number, string>();
  opCounters = { insert: 0, query: 0, update: 0, delete: 0, getmore: 0, command: 0 };
  /** Set when simulating a sharded cluster (`shards: N`): mongos's routing rules and counts. */
  sharding?: ShardRouter;

  constructor(options: EngineOptions) {
    this.clock = options.clock;
    this.replicaSet = options.replicaSet;
    this.logicalClock = new LogicalClock(() => this.clock.now());
    this.changeLog = new ChangeLog(() => this.clock.now(), this.logicalClock);
    this.sessions = new SessionRegistry(this.catalog, this);
  }

  record(op: WriteOp): void {
    const coll = this.catalog.get(op.db, op.coll);
    // Pre- and post-images are kept only for collections that ask for them, as on mongod.
    const images = (coll?.options.changeStreamPreAndPostImages as { enabled?: boolean } | undefined)?.enabled === true;
    // One object literal per event (spreading a base object into each cost more than the rest of
    // recording an insert).
    switch (op.kind) {
      case 'insert':
        this.changeLog.append({
          db: op.db,
          coll: op.coll,
          collectionUUID: coll?.uuid,
          operationType: 'insert',
          documentId: op.after?._id,
          fullDocument: op.after,
          txn: op.txn,
        });
        break;
      case 'replace':
        this.changeLog.append({
          db: op.db,
          coll: op.coll,
          collectionUUID: coll?.uuid,
          operationType: 'replace',
          documentId: op.after?._id,
          fullDocument: op.after,
          preImage: images ? op.before : undefined,
          postImage: images ? op.after : undefined,
          txn: op.txn,
        });
        break;
      case 'update':
        this.changeLog.append({
          db: op.db,
          coll: op.coll,
          collectionUUID: coll?.uuid,
          operationType: 'update',
          documentId: op.after?._id,
          updateDescription: describeUpdate(op.before ?? {}, op.after ?? {}),
          preImage: images ? op.before : undefined,
          postImage: images ? op.after : undefined,
          txn: op.txn,
        });
        break;
      case 'delete':
        this.changeLog.append({
          db: op.db,
          coll: op.coll,
          collectionUUID: coll?.uuid,
          operationType: 'delete',
          documentId: op.before?._id,
          preImage: images ? op.before : undefined,
          txn: op.txn,
        });
        break;
    }
  }

  /**
   * Steps down (see ReplState): waiting operations are interrupted, open transactions aborted
   * and change stream cursors killed (their getMore in flight fails with 11602). Resolves with
   * the report once primary again, after `ms` or at `repl.stepUp()`.
   */
  stepDown(ms: number | undefined): ReturnType<ReplState['stepDown']> {
    return this.repl.stepDown(ms, () => ({
      changeStreamsInterrupted: this.cursors.killWhere((source) => source instanceof ChangeStreamSource, interruptedByStepDown()),
      transactionsAborted: this.sessions.abortAll(),
    }));
  }

  view(db: string, coll: string, txn?: Transaction): CollectionView {
    // On a sharded cluster the config database is mongos's catalogue (config.collections...).
    if (db === 'config' && this.sharding) return new CommittedView(this.sharding.cluster.configCatalog(), this.sessions, this, db, coll);
    return txn ? new TransactionView(this.catalog, this.sessions, txn, db, coll) : new CommittedView(this.catalog, this.sessions, this, db, coll);
  }
}
