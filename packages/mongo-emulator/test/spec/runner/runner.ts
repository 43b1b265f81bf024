/**
 * A unified-format test runner (the subset the CRUD, transactions, convenient transactions API,
 * change streams and retryable writes suites use), driving the real `mongodb` driver. Against
 * the emulator every test gets a fresh one-member replica set; with MONGODB_URI set it runs
 * against that server instead, so the same runner can be checked on a real replica set.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EJSON } from 'bson';
import { MongoClient, type MongoClientOptions } from 'mongodb';
import { MongoEmulator } from '../../../src/index.js';
import { Entities, type CapturedEvent, type Doc } from './entities.js';
import { exactDocument, match, MatchError } from './match.js';
import { runOperation, type Operation, type RunContext } from './operations.js';

export interface SpecTest {
  description: string;
  runOnRequirements?: Doc[];
  skipReason?: string;
  operations: Operation[];
  expectEvents?: { client: string; eventType?: string; events: Doc[]; ignoreExtraEvents?: boolean }[];
  outcome?: { databaseName: string; collectionName: string; documents: Doc[] }[];
}

export interface SpecFile {
  /** File name without `.json`. */
  name: string;
  description: string;
  schemaVersion: string;
  runOnRequirements?: Doc[];
  createEntities?: Doc[];
  initialData?: { databaseName: string; collectionName: string; documents: Doc[]; createOptions?: Doc }[];
  tests: SpecTest[];
}

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

/** The newest schema version this runner reads (files declaring a later one are reported, not guessed at). */
const SUPPORTED_SCHEMA = [1, 22];

const loaded = new Map<string, SpecFile[]>();

/** The spec files of a suite, parsed once per process. */
export function loadSuite(suite: string): SpecFile[] {
  const cached = loaded.get(suite);
  if (cached) return cached;
  const dir = join(FIXTURES, suite);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ ...(EJSON.parse(readFileSync(join(dir, f), 'utf8'), { relaxed: true }) as Omit<SpecFile, 'name'>), name: f.replace(/\.json$/, '') }));
  loaded.set(suite, files);
  return files;
}

export interface ServerInfo {
  version: number[];
  topology: 'single' | 'replicaset' | 'sharded';
}

function parseVersion(v: string): number[] {
  const parts = v.split('.').map((p) => Number.parseInt(p, 10));
  while (parts.length < 3) parts.push(0);
  return parts;
}

function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/** Why a requirement is not met, or undefined when it is. */
function unmet(req: Doc, server: ServerInfo): string | undefined {
  if (typeof req.minServerVersion === 'string' && compareVersions(server.version, parseVersion(req.minServerVersion)) < 0) return `needs server >= ${req.minServerVersion}`;
  if (typeof req.maxServerVersion === 'string' && compareVersions(server.version, parseVersion(req.maxServerVersion)) > 0) return `needs server <= ${req.maxServerVersion}`;
  if (Array.isArray(req.topologies) && !req.topologies.includes(server.topology)) return `needs topology ${req.topologies.join('|')}`;
  if (req.serverless === 'require') return 'needs serverless';
  if (req.auth === true) return 'needs authentication';
  if (req.csfle !== undefined && req.csfle !== false) return 'needs client-side encryption';
  if (req.serverParameters !== undefined) return 'needs server parameters';
  return undefined;
}

/** Why a list of requirements (any one suffices) is not met, or undefined. */
export function requirementsUnmet(reqs: Doc[] | undefined, server: ServerInfo): string | undefined {
  if (!reqs || reqs.length === 0) return undefined;
  const reasons = reqs.map((r) => unmet(r, server));
  return reasons.every((r) => r !== undefined) ? reasons.join(' or ') : undefined;
}

export function schemaUnsupported(file: SpecFile): string | undefined {
  const [major, minor] = file.schemaVersion.split('.').map(Number);
  if (major !== SUPPORTED_SCHEMA[0] || minor > SUPPORTED_SCHEMA[1]) return `schema version ${file.schemaVersion} is newer than this runner`;
  return undefined;
}

/** A server to run one test against: a fresh emulator, or MONGODB_URI. */
export interface Server {
  uri: string;
  stop(): Promise<void>;
}

export async function startServer(): Promise<Server> {
  if (process.env.MONGODB_URI) return { uri: process.env.MONGODB_URI, stop: async () => undefined };
  const emulator = await MongoEmulator.start({ port: 0, ttlIntervalMs: 0 });
  return { uri: emulator.uri, stop: () => emulator.stop() };
}

/** Options of every client the runner makes: quick rediscovery after a fail point closed a connection. */
const CLIENT_DEFAULTS: MongoClientOptions = { minHeartbeatFrequencyMS: 50, serverSelectionTimeoutMS: 10_000 } as MongoClientOptions;

export async function serverInfo(client: MongoClient): Promise<ServerInfo> {
  const admin = client.db('admin');
  const build = await admin.command({ buildInfo: 1 });
  const hello = await admin.command({ hello: 1 });
  const topology = hello.msg === 'isdbgrid' ? 'sharded' : hello.setName ? 'replicaset' : 'single';
  return { version: parseVersion(build.version as string), topology };
}

/** Server error codes seen by any client of a test (a refusal must be one of them). */
export interface TestRecord {
  serverErrorCodes: Set<number>;
}

/** Runs one test of a file; throws on the first assertion that fails. */
export async function runTest(file: SpecFile, test: SpecTest, record: TestRecord = { serverErrorCodes: new Set() }): Promise<void> {
  const server = await startServer();
  const internal = new MongoClient(server.uri, { ...CLIENT_DEFAULTS, monitorCommands: true });
  internal.on('commandFailed', (e) => record.serverErrorCodes.add((e.failure as { code?: number }).code ?? -1));
  const entities = new Entities(server.uri, CLIENT_DEFAULTS, (client) =>
    client.on('commandFailed', (e) => record.serverErrorCodes.add((e.failure as { code?: number }).code ?? -1)),
  );
  try {
    await internal.connect();
    if (process.env.MONGODB_URI) await internal.db('admin').command({ killAllSessions: [] }).catch(() => undefined);
    await loadInitialData(internal, file);
    await entities.create(file.createEntities ?? []);
    const ctx: RunContext = { entities, internal };
    for (const op of test.operations) await runOperation(ctx, op);
    entities.stopCapturing();
    for (const expected of test.expectEvents ?? []) checkEvents(expected, entities);
    for (const outcome of test.outcome ?? []) await checkOutcome(internal, outcome);
  } finally {
    await entities.cleanup();
    await internal.close(true);
    await server.stop();
  }
}

async function loadInitialData(internal: MongoClient, file: SpecFile): Promise<void> {
  const majority = { writeConcern: { w: 'majority' as const } };
  for (const data of file.initialData ?? []) {
    await internal.db(data.databaseName).collection(data.collectionName).drop(majority).catch((err: { code?: number }) => {
      if (err.code !== 26) throw err;
    });
  }
  for (const data of file.initialData ?? []) {
    const db = internal.db(data.databaseName);
    if (data.createOptions || data.documents.length === 0) await db.createCollection(data.collectionName, { ...(data.createOptions ?? {}), ...majority });
    if (data.documents.length > 0) await db.collection(data.collectionName).insertMany(data.documents.map((d) => ({ ...d })), majority);
  }
}

function checkEvents(expected: NonNullable<SpecTest['expectEvents']>[number], entities: Entities): void {
  const client = entities.testClient(expected.client);
  const type = expected.eventType ?? 'command';
  if (type !== 'command' && type !== 'cmap') throw new Error(`unsupported eventType ${type}`);
  const actual = type === 'command' ? client.commandEvents : client.cmapEvents;
  const names = (list: { type: string }[]) => list.map((e) => e.type + ((e as CapturedEvent).event?.commandName ? `(${String((e as CapturedEvent).event.commandName)})` : ''));
  const countOk = expected.ignoreExtraEvents ? actual.length >= expected.events.length : actual.length === expected.events.length;
  if (!countOk) {
    throw new MatchError(`events(${expected.client})`, `expected ${expected.events.length} events ${JSON.stringify(expected.events.map((e) => Object.keys(e)[0]))}, got ${JSON.stringify(names(actual))}`);
  }
  expected.events.forEach((want, i) => {
    const [wantType, spec] = Object.entries(want)[0] as [string, Doc];
    const got = actual[i];
    const path = `events(${expected.client})[${i}]`;
    if (got.type !== wantType) throw new MatchError(path, `expected ${wantType}, got ${got.type}`);
    const event = got.event as Doc & { commandName?: string; databaseName?: string; command?: Doc; reply?: Doc };
    if (spec.commandName !== undefined && spec.commandName !== event.commandName) throw new MatchError(path, `expected command ${String(spec.commandName)}, got ${String(event.commandName)}`);
    if (spec.databaseName !== undefined && spec.databaseName !== event.databaseName) throw new MatchError(path, `expected database ${String(spec.databaseName)}, got ${String(event.databaseName)}`);
    if (spec.command !== undefined) match(spec.command, withoutDriverCommitTimeout(spec.command as Doc, event.command as Doc), entities, true, `${path}.command`);
    if (spec.reply !== undefined) match(spec.reply, event.reply, entities, true, `${path}.reply`);
    if (spec.hasServerConnectionId === true && event.serverConnectionId == null) throw new MatchError(path, 'expected a server connection id');
    if (spec.interruptInUseConnections !== undefined && spec.interruptInUseConnections !== event.interruptInUseConnections) {
      throw new MatchError(path, `expected interruptInUseConnections ${String(spec.interruptInUseConnections)}`);
    }
  });
}

/**
 * The Node driver adds `wtimeout: 10000` to commit/abortTransaction write concerns (its own
 * runner matches nested documents loosely, so it never notices); the format's expectations do
 * not list it. Drop it when the expectation does not mention it, so the match stays exact otherwise.
 */
function withoutDriverCommitTimeout(expected: Doc, actual: Doc | undefined): Doc | undefined {
  const wc = actual?.writeConcern as Doc | undefined;
  const expectedWc = expected.writeConcern as Doc | undefined;
  if (!actual || (actual.commitTransaction === undefined && actual.abortTransaction === undefined) || !wc || wc.wtimeout !== 10000 || !expectedWc || typeof expectedWc !== 'object' || 'wtimeout' in expectedWc) return actual;
  const { wtimeout: _driverDefault, ...rest } = wc;
  return { ...actual, writeConcern: rest };
}

async function checkOutcome(internal: MongoClient, outcome: NonNullable<SpecTest['outcome']>[number]): Promise<void> {
  const docs = await internal
    .db(outcome.databaseName)
    .collection(outcome.collectionName)
    .find({}, { sort: { _id: 1 }, readConcern: { level: 'local' }, readPreference: 'primary' })
    .toArray();
  if (!exactDocument(outcome.documents, docs)) {
    throw new MatchError(`outcome(${outcome.databaseName}.${outcome.collectionName})`, `expected ${EJSON.stringify(outcome.documents as never)}, got ${EJSON.stringify(docs as never)}`);
  }
}
