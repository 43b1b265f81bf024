import { MongoClient } from 'mongodb';
import { CONNECT_TIMEOUT_MS, firstLine, redactUri } from '../connection.js';
import { UnreachableError, UsageError } from '../errors.js';

/** Where `doctor` and `selftest` connect: --uri, else MONGODB_URI; the database from --database, LOOM_DATABASE or the URI. */
export function diagnosticTarget(options: { uri?: string; database?: string }, env: Record<string, string | undefined>): { uri: string; database?: string } {
  const uri = options.uri ?? env.MONGODB_URI;
  if (!uri) throw new UsageError('no database to talk to: pass --uri or set MONGODB_URI');
  if (!/^mongodb(\+srv)?:\/\//i.test(uri))
    throw new UsageError(`--uri ${redactUri(uri)} is not a MongoDB connection string (mongodb://... or mongodb+srv://...)`);
  const fromUri = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]+)/i.exec(uri)?.[1];
  const database = options.database ?? env.LOOM_DATABASE ?? (fromUri ? decodeURIComponent(fromUri) : undefined);
  return database === undefined ? { uri } : { uri, database };
}

/**
 * A connected client, or an {@link UnreachableError} naming the cause within
 * {@link CONNECT_TIMEOUT_MS}. A malformed connection string is a {@link UsageError}.
 */
export async function openClient(uri: string, appName: string): Promise<MongoClient> {
  const shown = redactUri(uri);
  let client: MongoClient;
  try {
    client = new MongoClient(uri, { serverSelectionTimeoutMS: CONNECT_TIMEOUT_MS, connectTimeoutMS: CONNECT_TIMEOUT_MS, appName });
  } catch (err) {
    throw new UsageError(`${shown} is not a valid connection string: ${firstLine(err)}`);
  }
  try {
    await client.connect();
    return client;
  } catch (err) {
    await client.close().catch(() => {});
    throw new UnreachableError(`cannot reach MongoDB at ${shown} within ${CONNECT_TIMEOUT_MS / 1000} s: ${firstLine(err)}`);
  }
}
