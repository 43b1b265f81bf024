import { MongoClient } from 'mongodb';

/** Which MongoDB a test run got. */
export type TestMongoKind = 'uri' | 'memory-server' | 'emulator';

/** A MongoDB for one test file. */
export interface TestMongo {
  /** Connection string to hand to the code under test. */
  readonly uri: string;
  /** A connected client, closed by `stop()`. */
  readonly client: MongoClient;
  readonly kind: TestMongoKind;
  /** True on a replica set (transactions and change streams work). Always the topology asked for. */
  readonly replicaSet: boolean;
  /** Why the sources before this one were not used, e.g. `MONGODB_URI not set` (also in the printed line). */
  readonly notUsed: readonly string[];
  /** A database name no other test file (or earlier run) uses; `stop()` drops it. */
  newDatabaseName(prefix?: string): string;
  /** Drops the databases handed out, closes the client, stops a server this call started. */
  stop(): Promise<void>;
}

export interface StartTestMongoOptions {
  /**
   * `'replica-set'` (default): transactions and change streams work; a `MONGODB_URI` that points
   * at a standalone is refused with an error (the tests asked for a replica set). `'standalone'`: a
   * server without them, to test the fallbacks; a replica-set `MONGODB_URI` is then passed over
   * for the next source, and the printed line says so.
   */
  topology?: 'replica-set' | 'standalone';
  /** Try mongodb-memory-server (when installed, with a cached mongod). `false` goes straight to the emulator. @default true */
  memoryServer?: boolean;
  /** Where the one line naming the choice goes. @default stderr */
  log?: (line: string) => void;
  /** How long mongodb-memory-server may take to start a cached mongod before we move on. @default 20s */
  memoryServerTimeoutMs?: number;
  /**
   * Start a server of this caller's own even when the test run shares one (see
   * {@link startSharedTestMongo}): for tests with server-wide effects (fail points, stopping the
   * server). `memoryServer: false` also starts one of its own. @default false
   */
  ownServer?: boolean;
}

/** The variable through which a test run's shared servers reach its test files (worker processes inherit it). */
export const SHARED_TEST_MONGO_ENV = 'LOOM_TEST_MONGO_SHARED';

interface SharedDescription {
  /** Why the sources after MONGODB_URI were passed over when the run chose. */
  notUsed: string[];
  servers: Record<'replica-set' | 'standalone', { uri: string; kind: TestMongoKind }>;
}

/** Servers started once for a whole test run; `stop()` them when the run ends. */
export interface SharedTestMongo {
  readonly kind: TestMongoKind;
  /** The variables that point `startTestMongo()` in test files at these servers (already set on `process.env`). */
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

interface StartedServer {
  uri: string;
  kind: TestMongoKind;
  detail: string;
  stop(): Promise<void>;
}

let databaseCounter = 0;

/**
 * Starts (or connects to) a MongoDB for tests, in this order:
 * 1. `MONGODB_URI`, when set (a standalone one is refused when a replica set is asked for);
 * 2. mongodb-memory-server (an optional peer: install it to use it), when a mongod binary is
 *    already on this machine (it never downloads here: a missing binary is detected up front, so
 *    CI without network never waits);
 * 3. `@loom/mongo-emulator`, in process.
 * Prints exactly one line saying which it used and why the earlier ones were not.
 */
export async function startTestMongo(options: StartTestMongoOptions = {}): Promise<TestMongo> {
  const topology = options.topology ?? 'replica-set';
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const reasons: string[] = [];
  const server =
    (await fromEnvironment(topology, reasons)) ??
    (options.ownServer || options.memoryServer === false ? undefined : fromShared(topology, reasons)) ??
    (options.memoryServer === false
      ? void reasons.push('mongodb-memory-server skipped (memoryServer: false)')
      : await fromMemoryServer(topology, options.memoryServerTimeoutMs ?? 20_000, reasons)) ??
    (await fromEmulator(topology));
  const client = new MongoClient(server.uri);
  try {
    await client.connect();
  } catch (err) {
    await server.stop();
    throw err;
  }
  const replicaSet = await isReplicated(client).catch(async (err: unknown) => {
    await client.close();
    await server.stop();
    throw err;
  });
  if (topology === 'replica-set' && !replicaSet) {
    await client.close();
    await server.stop();
    throw new Error(
      `startTestMongo: MONGODB_URI (${redact(server.uri)}) is a standalone, and these tests asked for a replica set (transactions, change streams). ` +
        "Point MONGODB_URI at a replica set (a single node started with --replSet is enough), unset it to use the emulator, or ask for { topology: 'standalone' }.",
    );
  }
  const skipped = reasons.length > 0 ? ` (${reasons.join('; ')})` : '';
  log(`[loom/testing] MongoDB for tests: ${server.kind}, ${replicaSet ? 'replica set' : 'standalone'}, ${server.detail}${skipped}`);
  const databases: string[] = [];
  return {
    uri: server.uri,
    client,
    kind: server.kind,
    replicaSet,
    notUsed: reasons,
    newDatabaseName(prefix = 'loom_test') {
      const safe = prefix.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 30);
      const name = `${safe}_${process.pid}_${Date.now().toString(36)}_${++databaseCounter}`;
      databases.push(name);
      return name;
    },
    async stop() {
      try {
        for (const name of databases) await client.db(name).dropDatabase();
      } finally {
        await client.close();
        await server.stop();
      }
    },
  };
}

async function isReplicated(client: MongoClient): Promise<boolean> {
  const hello = await client.db('admin').command({ hello: 1 });
  return typeof hello.setName === 'string' || hello.msg === 'isdbgrid';
}

/** A connection string without its credentials, for messages. */
function redact(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, '//');
}

async function fromEnvironment(topology: string, reasons: string[]): Promise<StartedServer | undefined> {
  const uri = process.env.MONGODB_URI;
  if (!uri) {
    reasons.push('MONGODB_URI not set');
    return undefined;
  }
  if (topology === 'standalone') {
    const probe = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 });
    try {
      if (await isReplicated(probe)) {
        reasons.push('MONGODB_URI is a replica set, a standalone was asked for');
        return undefined;
      }
    } finally {
      await probe.close();
    }
  }
  return { uri, kind: 'uri', detail: `MONGODB_URI (${redact(uri)})`, stop: async () => {} };
}

/** Only a specifier held in a variable keeps tsc from requiring these optional packages at build time. */
async function optionalImport<T>(specifier: string): Promise<T | undefined> {
  try {
    return (await import(specifier)) as T;
  } catch {
    return undefined;
  }
}

interface MemoryServerModule {
  DryMongoBinary: { generateOptions(): Promise<unknown>; locateBinary(opts: unknown): Promise<string | undefined> };
  MongoMemoryReplSet: { create(opts: unknown): Promise<{ getUri(): string; stop(): Promise<boolean> }> };
  MongoMemoryServer: { create(): Promise<{ getUri(): string; stop(): Promise<boolean> }> };
}

async function fromMemoryServer(topology: string, timeoutMs: number, reasons: string[]): Promise<StartedServer | undefined> {
  const ms = await optionalImport<MemoryServerModule>('mongodb-memory-server');
  if (!ms) {
    reasons.push('mongodb-memory-server not installed');
    return undefined;
  }
  // A download would hang (or fail slowly) without network: only use a binary already present.
  const binary = await ms.DryMongoBinary.locateBinary(await ms.DryMongoBinary.generateOptions()).catch(() => undefined);
  if (!binary) {
    reasons.push('no cached mongod binary for mongodb-memory-server');
    return undefined;
  }
  let timer: NodeJS.Timeout | undefined;
  const starting = topology === 'standalone' ? ms.MongoMemoryServer.create() : ms.MongoMemoryReplSet.create({ replSet: { count: 1 } });
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`mongod did not start within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    const server = await Promise.race([starting, timeout]);
    return { uri: server.getUri(), kind: 'memory-server', detail: binary, stop: async () => void (await server.stop()) };
  } catch (err) {
    starting.then((s) => s.stop()).catch(() => {});
    reasons.push(`mongodb-memory-server failed: ${(err as Error).message}`);
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts the servers a whole test run shares, chosen as `startTestMongo()` chooses (mongodb-memory-server
 * when it has a cached mongod, else the emulator): a replica set and a standalone. Meant for a test
 * runner's global setup (jest's `globalSetup`): it sets {@link SHARED_TEST_MONGO_ENV}, so that
 * `startTestMongo()` in every test file then connects to these instead of starting a server per
 * file; each file still gets databases of its own. With `MONGODB_URI` set it starts nothing (the
 * files use that), and returns undefined.
 */
export async function startSharedTestMongo(
  options: Pick<StartTestMongoOptions, 'memoryServer' | 'memoryServerTimeoutMs'> = {},
): Promise<SharedTestMongo | undefined> {
  if (process.env.MONGODB_URI) return undefined;
  /** Why mongodb-memory-server was not used for the replica set (MONGODB_URI's reason each file finds itself). */
  const notUsed: string[] = [];
  const start = async (topology: 'replica-set' | 'standalone', reasons: string[]): Promise<StartedServer> => {
    if (options.memoryServer === false) reasons.push('mongodb-memory-server skipped (memoryServer: false)');
    const viaMemoryServer = options.memoryServer === false ? undefined : await fromMemoryServer(topology, options.memoryServerTimeoutMs ?? 20_000, reasons);
    return viaMemoryServer ?? (await fromEmulator(topology));
  };
  const replicaSet = await start('replica-set', notUsed);
  let standalone: StartedServer;
  try {
    standalone = replicaSet.kind === 'emulator' ? await fromEmulator('standalone') : await start('standalone', []);
  } catch (err) {
    await replicaSet.stop();
    throw err;
  }
  const description: SharedDescription = {
    notUsed,
    servers: { 'replica-set': { uri: replicaSet.uri, kind: replicaSet.kind }, standalone: { uri: standalone.uri, kind: standalone.kind } },
  };
  const env = { [SHARED_TEST_MONGO_ENV]: JSON.stringify(description) };
  Object.assign(process.env, env);
  return {
    kind: replicaSet.kind,
    env,
    async stop() {
      delete process.env[SHARED_TEST_MONGO_ENV];
      await Promise.all([replicaSet.stop(), standalone.stop()]);
    },
  };
}

/** The run's shared server of `topology`, when a global setup started them (see startSharedTestMongo). */
function fromShared(topology: 'replica-set' | 'standalone', reasons: string[]): StartedServer | undefined {
  const raw = process.env[SHARED_TEST_MONGO_ENV];
  if (!raw) return undefined;
  const shared = JSON.parse(raw) as SharedDescription;
  reasons.push(...shared.notUsed);
  const { uri, kind } = shared.servers[topology];
  return { uri, kind, detail: `${uri}, shared by this test run`, stop: async () => {} };
}

interface EmulatorModule {
  MongoEmulator: { start(opts: { port: number; replicaSet?: boolean }): Promise<{ uri: string; stop(): Promise<void> }> };
}

async function fromEmulator(topology: string): Promise<StartedServer> {
  const mod = await optionalImport<EmulatorModule>('@loom/mongo-emulator');
  if (!mod?.MongoEmulator) {
    throw new Error('No MongoDB for tests: set MONGODB_URI, cache a mongod for mongodb-memory-server, or install @loom/mongo-emulator');
  }
  const emulator = await mod.MongoEmulator.start({ port: 0, replicaSet: topology === 'replica-set' });
  return { uri: emulator.uri, kind: 'emulator', detail: emulator.uri, stop: () => emulator.stop() };
}
