import { ReadConcern, ReadPreference, type ClientSession, type Collection, type MongoClient, type TransactionOptions } from 'mongodb';
import type {
  SeriesDocument,
  CompletedCountDocument,
  BatchDocument,
  DeadLetterDocument,
  FlowDocument,
  JobDocument,
  KeyTombstoneDocument,
  QueueDocument,
  ScheduleDocument,
  WaitTokenDocument,
  WorkerDocument,
  ValueChunkDocument,
  ValueFileDocument,
} from '../schema/documents.js';
import type { ResolvedOptions } from '../options.js';
import { AbandonedTransactions } from './abandoned-transactions.js';

/**
 * The store's collections. Every handle pins what the store's correctness rests on instead of
 * inheriting it from a client the application may share and tune for its own reads:
 * - primary reads with read concern `local`: a batch claim reads back what it just leased, a fenced
 *   read checks the lease it just wrote, a dedup lookup finds the job that just took the key. A
 *   lagging secondary (`secondaryPreferred`) or a majority snapshot (`readConcern: majority`
 *   with `w: 1` writes) could miss those writes: jobs leased but never run, false LEASE_LOST;
 * - the store's `writeConcern` on every write, and on the commit of every transaction it runs
 *   (`transactionOptions`), so a `w: 1` client cannot make a dead-letter move or a
 *   `ctx.transaction` completion rollback-able.
 */
export interface StoreCollections {
  client: MongoClient;
  jobs: Collection<JobDocument>;
  deadLetters: Collection<DeadLetterDocument>;
  schedules: Collection<ScheduleDocument>;
  keys: Collection<KeyTombstoneDocument>;
  /**
   * The jobs collection for the insert change stream: primary too, but read concern `majority`,
   * the only level `$changeStream` accepts (its events are majority-committed anyway).
   */
  jobInserts: Collection<JobDocument>;
  /** Options of every transaction the store runs: primary, snapshot reads, the store's write concern. */
  transactionOptions: TransactionOptions;
  /** Runs the store's transactions, and ends on the server those a lost connection left open there. */
  transactions: AbandonedTransactions;
  queues: Collection<QueueDocument>;
  /** Flow-control state: concurrency slots, rate-limit starts and holds, one document per name or key. */
  flow: Collection<FlowDocument>;
  /** Completed jobs per queue and finish-time bucket (`completed-counts.ts`): what `stats` reads instead of counting them. */
  counts: Collection<CompletedCountDocument>;
  /** Per-queue series buckets (`queue-series.ts`): what `queueSeries` reads. */
  series: Collection<SeriesDocument>;
  /** Batches (batches/batches.ts): one document per batch with its counts and callbacks. */
  batches: Collection<BatchDocument>;
  /** Wait tokens (`ctx.createWaitToken`), `_id` = the token id. */
  waitTokens: Collection<WaitTokenDocument>;
  /** Engines' presence rows (`recordPresence`), `_id` = the engine id; a TTL index deletes expired ones. */
  workers: Collection<WorkerDocument>;
  /** The payload bucket (payloads/offloaded-values.ts): files and their chunks, GridFS layout. */
  payloadFiles: Collection<ValueFileDocument>;
  payloadChunks: Collection<ValueChunkDocument>;
}

/** Opens (lazily, as the driver does) the collections named by the options. */
export function openCollections(client: MongoClient, options: ResolvedOptions): StoreCollections {
  const { database, writeConcern } = options;
  const db = client.db(database, { writeConcern, readPreference: ReadPreference.primary, readConcern: new ReadConcern('local') });
  const { collections: names } = options;
  return {
    client,
    jobs: db.collection<JobDocument>(names.jobs),
    deadLetters: db.collection<DeadLetterDocument>(names.deadLetters),
    schedules: db.collection<ScheduleDocument>(names.schedules),
    keys: db.collection<KeyTombstoneDocument>(names.keys),
    jobInserts: client.db(database, { readPreference: ReadPreference.primary, readConcern: new ReadConcern('majority') }).collection<JobDocument>(names.jobs),
    transactionOptions: { readPreference: ReadPreference.primary, readConcern: new ReadConcern('snapshot'), writeConcern },
    transactions: new AbandonedTransactions(client, options.logger),
    queues: db.collection<QueueDocument>(names.queues),
    flow: db.collection<FlowDocument>(names.flow),
    counts: db.collection<CompletedCountDocument>(names.counts),
    series: db.collection<SeriesDocument>(names.series),
    batches: db.collection<BatchDocument>(names.batches),
    waitTokens: db.collection<WaitTokenDocument>(names.waitTokens),
    workers: db.collection<WorkerDocument>(names.workers),
    payloadFiles: db.collection<ValueFileDocument>(names.payloadFiles),
    payloadChunks: db.collection<ValueChunkDocument>(names.payloadChunks),
  };
}

/** Runs `fn` in a transaction with the store's {@link StoreCollections.transactionOptions}. */
export function inTransaction<T>(collections: StoreCollections, fn: (session: ClientSession) => Promise<T>): Promise<T> {
  return collections.transactions.run(collections.transactionOptions, fn);
}

/** Session options for a driver call: `{ session }` when there is one, else nothing. */
export function withSession(session: ClientSession | undefined): { session?: ClientSession } {
  return session ? { session } : {};
}
