/**
 * `appMongo()`: the MongoDB an application runs on, found with no setup. `MONGODB_URI` whenever it
 * is set, and always in production; in development without it, an in-process emulator. The rule
 * lives here so that an app outside this repository gets it with one call instead of a copy of the
 * examples' recipe.
 */
import { MongoEmulator } from './emulator.js';
import { MongoUriRequiredError } from './errors.js';

export interface AppMongoOptions {
  /** Where `MONGODB_URI` and `NODE_ENV` are read (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Where the one line saying which MongoDB was chosen, and why, goes (default `console.warn`). */
  log?: (line: string) => void;
  /** The emulator's replica set (default true: one member named "rs0", so transactions work); false for a standalone. */
  replicaSet?: boolean | string;
}

export interface AppMongo {
  /** The connection string for `new MongoClient(uri)` or `new MongoStore({ url: uri })`. */
  readonly uri: string;
  /** `'MONGODB_URI'`: the environment's; `'emulator'`: the in-process emulator this call started. */
  readonly source: 'MONGODB_URI' | 'emulator';
  /** The line that was logged: which MongoDB, why, and whether data survives the process. */
  readonly description: string;
  /** Stops what this call started (nothing for `MONGODB_URI`); safe to call more than once. */
  close(): Promise<void>;
}

/**
 * The MongoDB for an application: `MONGODB_URI` when set; else, unless `NODE_ENV` is `production`
 * (then it throws {@link MongoUriRequiredError}), an in-process emulator on a free local port.
 * Logs one line saying which and why.
 *
 * The emulator lives in this process: it keeps nothing after exit, and its listener does not by
 * itself keep the process alive (an app that closed its clients and servers exits, stopping the
 * emulator first). `close()` stops it earlier, e.g. after `store.close()` in a shutdown handler.
 *
 * @example
 * ```ts
 * const mongo = await appMongo();      // "MongoDB: the in-process emulator at ..., because MONGODB_URI is not set ..."
 * const store = new MongoStore({ url: mongo.uri, database: 'app' });
 * // ... on shutdown: await store.close(); await mongo.close();
 * ```
 */
export async function appMongo(options: AppMongoOptions = {}): Promise<AppMongo> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => console.warn(line));
  const set = env.MONGODB_URI;
  if (set) {
    // Credentials never reach the log.
    const description = `MongoDB: MONGODB_URI (${set.replace(/\/\/[^@/]*@/, '//')}), because it is set; data stays there after exit`;
    log(description);
    return { uri: set, source: 'MONGODB_URI', description, close: async () => {} };
  }
  if (env.NODE_ENV === 'production') throw new MongoUriRequiredError();
  const emulator = await MongoEmulator.start({ replicaSet: options.replicaSet ?? true });
  emulator.unref();
  const close = (): Promise<void> => {
    process.off('beforeExit', onBeforeExit);
    return emulator.stop();
  };
  const onBeforeExit = (): void => void close();
  process.on('beforeExit', onBeforeExit);
  const description =
    `MongoDB: the in-process emulator (@loom/mongo-emulator) at ${emulator.uri}, because MONGODB_URI is not set ` +
    'and NODE_ENV is not production; it keeps nothing after exit (set MONGODB_URI to use a real MongoDB)';
  log(description);
  return { uri: emulator.uri, source: 'emulator', description, close };
}
