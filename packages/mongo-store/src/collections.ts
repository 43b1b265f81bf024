import type { ClientSession, Collection, MongoClient } from 'mongodb';
import type { DeadLetterDocument, JobDocument, KeyTombstoneDocument, ScheduleDocument } from './documents.js';
import type { ResolvedOptions } from './options.js';

/** The store's collections, all with the configured write concern. */
export interface StoreCollections {
  client: MongoClient;
  jobs: Collection<JobDocument>;
  deadLetters: Collection<DeadLetterDocument>;
  schedules: Collection<ScheduleDocument>;
  keys: Collection<KeyTombstoneDocument>;
}

/** Opens (lazily, as the driver does) the collections named by the options. */
export function openCollections(client: MongoClient, options: ResolvedOptions): StoreCollections {
  const db = client.db(options.database, { writeConcern: options.writeConcern });
  const { collections: names } = options;
  return {
    client,
    jobs: db.collection<JobDocument>(names.jobs),
    deadLetters: db.collection<DeadLetterDocument>(names.deadLetters),
    schedules: db.collection<ScheduleDocument>(names.schedules),
    keys: db.collection<KeyTombstoneDocument>(names.keys),
  };
}

/** Session options for a driver call: `{ session }` when there is one, else nothing. */
export function withSession(session: ClientSession | undefined): { session?: ClientSession } {
  return session ? { session } : {};
}
