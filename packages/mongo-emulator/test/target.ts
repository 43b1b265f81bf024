/**
 * The server under test: a real mongod when MONGODB_URI is set (it must be a replica set for the
 * session, transaction and change stream suites), otherwise a fresh MongoEmulator. Tests talk
 * to it only through the official driver, so the same files check the emulator's fidelity.
 * Suites about the emulator itself (its clock, index plans, refusals, CLI) pass `emulator: true`:
 * they run against a fresh emulator in every environment, with MONGODB_URI set or not.
 */
import { afterAll, beforeAll, beforeEach } from '@jest/globals';
import { MongoClient, MongoServerError, type Collection, type Db, type Document } from 'mongodb';
import { MongoEmulator, type EmulatorClock } from '../src/index.js';

export interface Target {
  client: MongoClient;
  db: Db;
  uri: string;
  /** Present only when the emulator is the target (emulator-specific assertions). */
  emulator?: MongoEmulator;
  close(): Promise<void>;
}

let dbCounter = 0;

export const againstRealServer = Boolean(process.env.MONGODB_URI);

export async function openTarget(options: { replicaSet?: boolean; clock?: EmulatorClock; emulator?: boolean } = {}): Promise<Target> {
  const emulator =
    againstRealServer && !options.emulator
      ? undefined
      : await MongoEmulator.start({ port: 0, replicaSet: options.replicaSet ?? true, clock: options.clock, ttlIntervalMs: 0 });
  const uri = emulator ? emulator.uri : (process.env.MONGODB_URI as string);
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
  await client.connect();
  const db = client.db(`loom_emu_test_${process.pid}_${++dbCounter}`);
  return {
    client,
    db,
    uri,
    emulator,
    async close() {
      if (!emulator) await db.dropDatabase();
      await client.close();
      await emulator?.stop();
    },
  };
}

/** A clock tests move by hand (TTL expiry). */
export class ManualClock implements EmulatorClock {
  constructor(private current = new Date('2026-01-01T00:00:00Z')) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

/** Awaits `p`, which must reject with a server error (the error shapes are what these suites check). */
export async function serverError(p: Promise<unknown>): Promise<MongoServerError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof MongoServerError)) throw new Error(`expected a MongoServerError, got ${String(e)}`);
  return e;
}

/**
 * The setup most suites share: the target opened before the file's tests and closed after them,
 * and before each test a fresh collection `${prefix}_N`, handed to `use` with the target (`use`
 * may prepare the collection).
 */
export function freshCollectionEachTest(prefix: string, use: (target: Target, coll: Collection<Document>) => void | Promise<void>): void {
  let target: Target;
  let n = 0;
  beforeAll(async () => {
    target = await openTarget();
  });
  afterAll(async () => {
    await target.close();
  });
  beforeEach(() => use(target, target.db.collection(`${prefix}_${++n}`)));
}
