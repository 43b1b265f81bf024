import { MongoClient } from 'mongodb';

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
 * The dev-mode recipe of the README: `MONGODB_URI` when set (always, in production); in
 * development without it, the in-process emulator from `@loom/mongo-emulator`, a devDependency
 * loaded only on this path. Production code never imports the test kit.
 */
export async function openShopDatabase(): Promise<ShopDatabase> {
  const url = process.env.MONGODB_URI;
  if (url) {
    const client = await new MongoClient(url).connect();
    const description = `MongoDB: MONGODB_URI (${url.replace(/\/\/[^@/]*@/, '//')}); data stays there after exit`;
    return { client, uri: url, kind: 'uri', keepsData: true, description, close: () => client.close() };
  }
  if (process.env.NODE_ENV === 'production') {
    throw new Error('MONGODB_URI is not set: in production the shop needs a MongoDB replica set, e.g. mongodb://db1,db2,db3/?replicaSet=rs0');
  }
  const { MongoEmulator } = await import('@loom/mongo-emulator');
  const emulator = await MongoEmulator.start({ replicaSet: true });
  const client = await new MongoClient(emulator.uri).connect();
  return {
    client,
    uri: emulator.uri,
    kind: 'emulator',
    keepsData: false,
    description:
      'MongoDB: the in-process emulator (@loom/mongo-emulator), not a mongod, because MONGODB_URI is not set; ' +
      'it keeps nothing after exit (set MONGODB_URI to a replica set to use a real mongod and keep data)',
    close: async () => {
      await client.close();
      await emulator.stop();
    },
  };
}
