import { MongoClient } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import type { GlobalOptions } from './args.js';
import { RefusedError, UnreachableError, UsageError } from './errors.js';

/** How long the command waits for the server before saying it cannot reach it (the whole run stays under 5 s). */
export const CONNECT_TIMEOUT_MS = 3_500;

/** The connection string with its password (if any) replaced by `***`: safe to print. */
export function redactUri(uri: string): string {
  return uri.replace(/^(mongodb(?:\+srv)?:\/\/[^:@/?#]*):[^@/?#]*@/i, '$1:***@');
}

/** Where the store is: from the options, else MONGODB_URI / LOOM_DATABASE, else the URI's database. */
export function resolveTarget(global: GlobalOptions, env: Record<string, string | undefined>): { uri: string; database: string; prefix: string } {
  const uri = global.uri ?? env.MONGODB_URI;
  if (!uri) throw new UsageError('no database to talk to: pass --uri or set MONGODB_URI');
  if (!/^mongodb(\+srv)?:\/\//i.test(uri))
    throw new UsageError(`--uri ${redactUri(uri)} is not a MongoDB connection string (mongodb://... or mongodb+srv://...)`);
  const fromUri = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]+)/i.exec(uri)?.[1];
  const database = global.database ?? env.LOOM_DATABASE ?? (fromUri ? decodeURIComponent(fromUri) : undefined);
  if (!database) throw new UsageError('no database named: pass --database, set LOOM_DATABASE, or name it in the URI (mongodb://host/DB)');
  return { uri, database, prefix: global.prefix ?? 'loom_' };
}

/** A connected client and the store on it; `close()` releases both. */
export interface Connection {
  store: MongoStore;
  close(): Promise<void>;
}

/**
 * Connects within {@link CONNECT_TIMEOUT_MS} and opens the store without initialising it (the
 * command line creates no indexes and moves nothing by itself). A database without Loom's jobs
 * collection under that prefix is refused: it is the wrong database or prefix.
 */
export async function connect(target: { uri: string; database: string; prefix: string }, warn: (line: string) => void): Promise<Connection> {
  const shown = redactUri(target.uri);
  let client: MongoClient;
  try {
    client = new MongoClient(target.uri, { serverSelectionTimeoutMS: CONNECT_TIMEOUT_MS, connectTimeoutMS: CONNECT_TIMEOUT_MS, appName: 'loom-cli' });
  } catch (err) {
    throw new UsageError(`${shown} is not a valid connection string: ${(err as Error).message}`);
  }
  try {
    await client.connect();
  } catch (err) {
    await client.close().catch(() => {});
    throw new UnreachableError(`cannot reach MongoDB at ${shown} within ${CONNECT_TIMEOUT_MS / 1000} s: ${firstLine(err)}`);
  }
  const close = () => client.close();
  try {
    const jobs = `${target.prefix}jobs`;
    const found = await client.db(target.database).listCollections({ name: jobs }, { nameOnly: true }).toArray();
    if (found.length === 0) {
      throw new RefusedError(`no Loom store in database '${target.database}' at ${shown}: it has no collection '${jobs}' (check --database and --prefix)`);
    }
  } catch (err) {
    await close();
    throw err;
  }
  const logger = {
    debug: () => {},
    warn: (_: unknown, msg?: string) => warn(`warning: ${msg ?? ''}`),
    error: (_: unknown, msg?: string) => warn(`error: ${msg ?? ''}`),
  };
  const store = new MongoStore({ client, database: target.database, collectionPrefix: target.prefix, logger });
  return { store, close };
}

/** An error's message, on one line. */
export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0]!.trim();
}
