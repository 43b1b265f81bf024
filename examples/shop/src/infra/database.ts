import { MongoClient } from 'mongodb';
import { appMongo, MongoUriRequiredError } from '@loom/mongo-emulator';

/** The MongoDB the shop runs on, and how to let go of it. */
export interface ShopDatabase {
  client: MongoClient;
  /** The connection string (the emulator listens on a local port too), e.g. for the `loom` command. */
  uri: string;
  kind: 'uri' | 'emulator';
  /** False for the in-process emulator: nothing survives the process. */
  keepsData: boolean;
  /** One line for humans: which MongoDB, why, and whether anything survives the process. */
  description: string;
  close(): Promise<void>;
}

/**
 * `MONGODB_URI` when set (always, in production); in development without it, the in-process
 * emulator: `appMongo()` of `@loom/mongo-emulator` makes that choice. The shop words the line itself.
 */
export async function openShopDatabase(): Promise<ShopDatabase> {
  const mongo = await appMongo({ log: () => {} }).catch((err: unknown) => {
    if (err instanceof MongoUriRequiredError) {
      throw new Error('MONGODB_URI is not set: in production the shop needs a MongoDB replica set, e.g. mongodb://db1,db2,db3/?replicaSet=rs0', { cause: err });
    }
    throw err;
  });
  const client = await new MongoClient(mongo.uri).connect();
  const close = async (): Promise<void> => {
    await client.close();
    await mongo.close();
  };
  if (mongo.source === 'MONGODB_URI') {
    const description = `MongoDB: MONGODB_URI (${mongo.uri.replace(/\/\/[^@/]*@/, '//')}); data stays there after exit`;
    return { client, uri: mongo.uri, kind: 'uri', keepsData: true, description, close };
  }
  return {
    client,
    uri: mongo.uri,
    kind: 'emulator',
    keepsData: false,
    description:
      'MongoDB: the in-process emulator (@loom/mongo-emulator), not a mongod, because MONGODB_URI is not set; ' +
      'it keeps nothing after exit (set MONGODB_URI to a replica set to use a real mongod and keep data)',
    close,
  };
}
