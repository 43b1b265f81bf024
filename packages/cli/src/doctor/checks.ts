import { JOBS_SHARD_KEY } from '@loom/mongo-store';
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return -- doctor reads untyped server replies (hello, change events, listIndexes) */
import { performance } from 'node:perf_hooks';
import { MongoServerError, ObjectId, type Collection, type Db, type Document, type MongoClient } from 'mongodb';
import { indexPlan, verifyIndexes, WORKERS_EXPIRY_INDEX, type IndexSpec } from '@loom/mongo-store';
import { firstLine } from '../connection.js';
import { fail, pass, warn, type CheckResult, type Topology } from './check.js';

/**
 * The checks of `loom doctor`, one function each. Every check catches what it expects to go wrong
 * and turns it into a warn or a fail that says what to do; an unexpected error fails that check
 * with the server's own words, and the other checks still run.
 */

/** The oldest MongoDB Loom is tested against: the emulator answers as 7.0 (see the README's "What is and is not tested"). */
export const TESTED_SERVER_VERSION = '7.0';

/** Loom's default lease (`lease: '30s'`): the clock check's thresholds are a tenth (warn) and a half (fail) of it. */
export const DEFAULT_LEASE_MS = 30_000;

/** How long the change-stream check waits for the event of its own write. */
export const CHANGE_STREAM_WAIT_MS = 5_000;

/** `wtimeout` of the `w: 'majority'` probe write. */
export const MAJORITY_WAIT_MS = 5_000;

/** The scratch collection the write checks use; dropped when the checks end. */
export const PROBE_COLLECTION = 'loom_doctor_probe';

const STANDALONE_ADVICE = 'Loom works, but ctx.transaction and enqueue with { session } fail: run a replica set (one member is enough) to have them';

/** `hello`'s kind of deployment. */
export function topologyOf(hello: Document): Topology {
  if (hello.msg === 'isdbgrid') return 'sharded';
  if (typeof hello.setName === 'string') return 'replica set';
  return 'standalone';
}

export function checkTopology(hello: Document): CheckResult {
  const name = 'topology';
  const topology = topologyOf(hello);
  if (topology === 'sharded') return pass(name, 'sharded cluster, through mongos', { topology });
  if (topology === 'standalone') return warn(name, `standalone server: ${STANDALONE_ADVICE}`, { topology });
  const detail = { topology, setName: hello.setName, primary: hello.primary, members: Array.isArray(hello.hosts) ? hello.hosts.length : undefined };
  if (hello.isWritablePrimary !== true) {
    return warn(
      name,
      `replica set ${hello.setName}, but connected to a member that is not its primary: leave directConnection out of the URI (or name the set with replicaSet=${hello.setName}) so the driver follows the primary`,
      detail,
    );
  }
  return pass(name, `replica set ${hello.setName}, primary ${hello.primary ?? hello.me ?? '?'}, ${detail.members ?? '?'} member(s)`, detail);
}

function versionParts(version: string): [number, number] {
  const [major = 0, minor = 0] = version.split('.').map((p) => Number.parseInt(p, 10));
  return [major, minor];
}

export async function checkServerVersion(db: Db): Promise<CheckResult> {
  const name = 'server version';
  const info = await db.admin().command({ buildInfo: 1 });
  const version = String(info.version);
  const [major, minor] = versionParts(version);
  const [wantMajor, wantMinor] = versionParts(TESTED_SERVER_VERSION);
  const detail = { version, tested: TESTED_SERVER_VERSION };
  if (major < wantMajor || (major === wantMajor && minor < wantMinor)) {
    return warn(
      name,
      `MongoDB ${version} is older than ${TESTED_SERVER_VERSION}, the version Loom is tested against: upgrade, or run 'loom selftest' on a scratch database of this deployment first`,
      detail,
    );
  }
  return pass(name, `MongoDB ${version}`, detail);
}

export async function checkTransactions(client: MongoClient, probe: Collection, topology: Topology): Promise<CheckResult> {
  const name = 'transactions';
  const session = client.startSession();
  const _id = new ObjectId();
  try {
    session.startTransaction({ writeConcern: { w: 'majority' }, readConcern: { level: 'snapshot' } });
    try {
      await probe.insertOne({ _id, probe: 'transaction' }, { session });
      await session.commitTransaction();
    } catch (err) {
      if (session.inTransaction()) await session.abortTransaction().catch(() => {});
      throw err;
    }
    const seen = await probe.countDocuments({ _id });
    if (seen !== 1)
      return fail(
        name,
        `a committed transaction's write is not there (found ${seen}): Loom's transactional enqueue and completion cannot be trusted on this deployment`,
      );
    return pass(name, 'a transaction on a scratch collection committed');
  } catch (err) {
    // A standalone refuses in more than one way (the driver's "does not support retryable writes",
    // the server's IllegalOperation): all of them mean the same thing there.
    if (topology === 'standalone') return warn(name, `not available on a standalone: ${STANDALONE_ADVICE}`, { error: firstLine(err) });
    return fail(name, `a transaction on a scratch collection failed: ${firstLine(err)}; ctx.transaction and enqueue with { session } will fail the same way`, {
      error: firstLine(err),
    });
  } finally {
    await session.endSession().catch(() => {});
  }
}

export async function checkChangeStreams(probe: Collection, topology: Topology): Promise<CheckResult> {
  const name = 'change streams';
  const stream = probe.watch([], { maxAwaitTimeMS: 100 });
  try {
    // Opens the cursor: events from here on are seen.
    await stream.tryNext();
    const _id = new ObjectId();
    const started = performance.now();
    await probe.insertOne({ _id, probe: 'change-stream' });
    while (performance.now() - started < CHANGE_STREAM_WAIT_MS) {
      const event = (await stream.tryNext()) as Document | null;
      if (event?.operationType === 'insert' && _id.equals(event.documentKey?._id)) {
        const ms = Math.round(performance.now() - started);
        return pass(name, `the event of a write arrived in ${ms} ms`, { latencyMs: ms });
      }
    }
    return fail(
      name,
      `no change event within ${CHANGE_STREAM_WAIT_MS / 1000} s of a write: engines fall back to polling (each job waits up to pollInterval); check the oplog and that the user may run $changeStream`,
      { waitedMs: CHANGE_STREAM_WAIT_MS },
    );
  } catch (err) {
    if (topology === 'standalone') {
      return warn(
        name,
        'not available on a standalone: engines poll instead (a new job waits up to pollInterval, 1 s by default); a replica set wakes them at once',
        { error: firstLine(err) },
      );
    }
    return fail(name, `cannot open a change stream: ${firstLine(err)}; engines fall back to polling`, { error: firstLine(err) });
  } finally {
    await stream.close().catch(() => {});
  }
}

export async function checkMajorityWrites(probe: Collection): Promise<CheckResult> {
  const name = "w: 'majority'";
  const started = performance.now();
  try {
    await probe.insertOne({ _id: new ObjectId(), probe: 'majority' }, { writeConcern: { w: 'majority', wtimeoutMS: MAJORITY_WAIT_MS } });
    const ms = Math.round(performance.now() - started);
    return pass(name, `a majority-acknowledged write took ${ms} ms`, { latencyMs: ms });
  } catch (err) {
    return fail(
      name,
      `a write with { w: 'majority', wtimeout: ${MAJORITY_WAIT_MS} } failed: ${firstLine(err)}; Loom writes with w: 'majority' by default, so its writes would stall: bring a majority of data-bearing members back (or set MongoStore's writeConcern knowingly)`,
      { error: firstLine(err) },
    );
  }
}

async function existingIndexes(collection: Collection): Promise<Document[] | undefined> {
  try {
    return await collection.listIndexes().toArray();
  } catch (err) {
    if (err instanceof MongoServerError && err.code === 26) return undefined; // NamespaceNotFound
    throw err;
  }
}

/**
 * Loom's indexes against @loom/mongo-store's own plan and verification. TTL (retention) indexes
 * follow each application's retention options, so they are reported, never judged.
 */
export async function checkIndexes(db: Db, prefix: string): Promise<CheckResult> {
  const name = 'indexes';
  const plan = indexPlan({ retentionSeconds: { completed: false, dead: false } });
  const collections: [string, IndexSpec[]][] = [
    [`${prefix}jobs`, plan.jobs],
    [`${prefix}dead_letters`, plan.deadLetters],
    [`${prefix}flow`, plan.flow],
    [`${prefix}workers`, plan.workers],
  ];
  const jobs = await existingIndexes(db.collection(collections[0]![0]));
  if (jobs === undefined) {
    return warn(
      name,
      `no Loom store in database '${db.databaseName}' (no collection '${prefix}jobs'): start a Loom engine on it once (init() creates the collections and indexes), or check --database and --prefix`,
    );
  }
  const missing: string[] = [];
  const differing: string[] = [];
  const retention: string[] = [];
  for (const [collectionName, specs] of collections) {
    const collection = db.collection(collectionName);
    const existing = (await existingIndexes(collection)) ?? [];
    // The workers' TTL index is Loom's own (presence rows expire), not a retention choice.
    for (const index of existing)
      if (index.expireAfterSeconds !== undefined && index.name !== WORKERS_EXPIRY_INDEX)
        retention.push(`${collectionName}.${index.name} (${index.expireAfterSeconds} s)`);
    for (const spec of specs) {
      if (!existing.some((ix) => ix.name === spec.name)) {
        missing.push(`${collectionName}.${spec.name}`);
        continue;
      }
      try {
        await verifyIndexes(collection, [spec]);
      } catch (err) {
        differing.push(
          firstLine(err)
            .replace(/^MongoStore cannot start: /, '')
            .replace(/\. Drop that index.*$/, ''),
        );
      }
    }
  }
  const detail = { missing, differing, retention };
  if (differing.length > 0) {
    return fail(name, `${differing.join('; ')}: drop it (dropIndex) and start a Loom engine once, whose init() recreates it as Loom needs it`, detail);
  }
  if (missing.length > 0) {
    return fail(
      name,
      `missing: ${missing.join(', ')}: start a Loom engine of this version once (init() creates them); until then claims and list pages fail`,
      detail,
    );
  }
  const count = collections.reduce((n, [, specs]) => n + specs.length, 0);
  return pass(
    name,
    `all ${count} of Loom's indexes present and as Loom creates them${retention.length > 0 ? `; retention: ${retention.join(', ')}` : ''}`,
    detail,
  );
}

/** One `hello` bracketed by this host's clock. */
async function clockSample(db: Db): Promise<{ before: number; after: number; server: number }> {
  const before = Date.now();
  const hello = await db.admin().command({ hello: 1 });
  const after = Date.now();
  if (!(hello.localTime instanceof Date)) throw new Error('the server did not send localTime in its hello reply');
  return { before, after, server: hello.localTime.getTime() };
}

/**
 * The server's clock against this host's: `hello.localTime` bracketed by the local clock before
 * and after the round trip (the tightest of three), so only the offset beyond half the round trip
 * is counted.
 */
export async function checkClock(db: Db, leaseMs = DEFAULT_LEASE_MS): Promise<CheckResult> {
  const name = 'clock';
  let best = await clockSample(db);
  for (let i = 0; i < 2; i++) {
    const sample = await clockSample(db);
    if (sample.after - sample.before < best.after - best.before) best = sample;
  }
  const halfTrip = (best.after - best.before) / 2;
  const offset = best.server - (best.before + halfTrip);
  const skew = Math.max(0, Math.abs(offset) - halfTrip);
  const detail = { offsetMs: Math.round(offset), roundTripMs: best.after - best.before, warnAboveMs: leaseMs / 10, failAboveMs: leaseMs / 2 };
  const direction = offset > 0 ? 'behind' : 'ahead of';
  const said = `this host's clock is ${Math.round(skew)} ms ${direction} the server's (±${Math.ceil(halfTrip)} ms)`;
  if (skew > leaseMs / 2)
    return fail(name, `${said}: leases of ${leaseMs / 1000} s cannot be trusted; sync this host with NTP before running Loom here`, detail);
  if (skew > leaseMs / 10)
    return warn(name, `${said}, above a tenth of the default lease (${leaseMs / 1000} s): engines on this host warn at start; sync it with NTP`, detail);
  return pass(name, said, detail);
}

/** A median round trip above this is a server far from this host (another region): the check warns. */
export const DISTANT_SERVER_MS = 20;

/** How many `ping`s the round-trip check times (after one that warms the connection). */
const ROUND_TRIP_PINGS = 5;

/**
 * The round trip of one command to the server (`ping`, the median of five on a warm connection).
 * Every claim and completion waits at least one, and a job starts about three after its enqueue
 * (the insert, the change stream's event, the claim), so this is the floor of enqueue → start on
 * this host. `now` is a clock in milliseconds (tests pass their own).
 */
export async function checkRoundTrip(db: Db, now: () => number = () => performance.now()): Promise<CheckResult> {
  const name = 'round trip';
  const admin = db.admin();
  await admin.command({ ping: 1 });
  const times: number[] = [];
  for (let i = 0; i < ROUND_TRIP_PINGS; i++) {
    const started = now();
    await admin.command({ ping: 1 });
    times.push(now() - started);
  }
  times.sort((a, b) => a - b);
  const median = times[ROUND_TRIP_PINGS >> 1]!;
  const shown = median < 10 ? median.toFixed(1) : String(Math.round(median));
  const detail = { medianMs: Math.round(median * 10) / 10, maxMs: Math.round(times.at(-1)! * 10) / 10, warnAboveMs: DISTANT_SERVER_MS };
  const said = `a command takes ${shown} ms there and back (median of ${ROUND_TRIP_PINGS} pings); a job starts about 3 of them after its enqueue`;
  if (median > DISTANT_SERVER_MS)
    return warn(name, `${said}: this host is far from the server; run engines near the primary (its region) so jobs start and finish sooner`, detail);
  return pass(name, said, detail);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** On a mongos: Loom's collections of the database in `config.collections` (sharded ones are warned about). */
export async function checkSharding(client: MongoClient, database: string, prefix: string, topology: Topology): Promise<CheckResult> {
  const name = 'sharding';
  if (topology !== 'sharded') return pass(name, `not a sharded cluster: Loom's collections are unsharded`);
  const entries = await client
    .db('config')
    .collection<{ _id: string; key?: Document; dropped?: boolean; unsplittable?: boolean }>('collections')
    .find({ _id: { $regex: `^${escapeRegex(database)}\\.${escapeRegex(prefix)}` } })
    .toArray();
  const live = entries.filter((e) => e.dropped !== true && e.unsplittable !== true);
  const sharded = live.map((e) => e._id);
  const jobsNs = `${database}.${prefix}jobs`;
  const wrong = live.filter((e) => {
    const key = JSON.stringify(e.key ?? {});
    return e._id === jobsNs ? key !== JSON.stringify(JOBS_SHARD_KEY) : !['{"_id":1}', '{"_id":"hashed"}'].includes(key);
  });
  if (wrong.length > 0) {
    return fail(
      name,
      `sharded on a key Loom cannot target: ${wrong.map((e) => `${e._id} ${JSON.stringify(e.key)}`).join(', ')}; the jobs collection must be sharded on {"queue":1,"partition":1} and the others stay unsharded (MongoStore refuses to start): see \`loom shard-plan\` and the README's "Scaling out"`,
      { sharded },
    );
  }
  if (sharded.length > 0) {
    return pass(name, `sharded as Loom's commands expect: ${sharded.join(', ')} (see the README's "Scaling out")`, { sharded });
  }
  return pass(name, `Loom's collections in '${database}' are unsharded (on the database's primary shard)`, { sharded });
}
