import type { MongoClient } from 'mongodb';
import { startTestMongo, type TestMongoKind } from '@loom/testing/mongo';

/** The MongoDB the shop runs on, and how to let go of it. */
export interface ShopDatabase {
  client: MongoClient;
  kind: TestMongoKind;
  /** One line for humans: which MongoDB, and whether anything survives the process. */
  description: string;
  close(): Promise<void>;
}

/**
 * Picks a MongoDB with no setup, the way Loom's own tests do: `MONGODB_URI` when set, else a real
 * mongod through mongodb-memory-server if one can start here, else the in-process emulator.
 */
export async function openShopDatabase(): Promise<ShopDatabase> {
  const mongo = await startTestMongo({ log: () => {}, memoryServerTimeoutMs: 15_000 });
  const description = {
    uri: `MongoDB: MONGODB_URI (${redact(mongo.uri)}); data stays there after exit`,
    'memory-server': 'MongoDB: a real mongod started by mongodb-memory-server; it is deleted at exit (set MONGODB_URI to keep data)',
    emulator:
      'MongoDB: the in-process emulator (@loom/mongo-emulator), because MONGODB_URI is not set and no mongod could start; it keeps nothing after exit',
  }[mongo.kind];
  return {
    client: mongo.client,
    kind: mongo.kind,
    description: mongo.replicaSet ? description : `${description} [standalone: no transactions, the shop needs a replica set]`,
    close: () => mongo.stop(),
  };
}

function redact(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, '//***@');
}
