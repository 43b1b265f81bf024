import type { Db, MongoClient } from 'mongodb';
import { firstLine, redactUri } from '../connection.js';
import { openClient } from '../diagnostics/client.js';
import { UnreachableError } from '../errors.js';
import { fail, warn, type CheckResult } from './check.js';
import {
  checkChangeStreams,
  checkClock,
  checkIndexes,
  checkMajorityWrites,
  checkRoundTrip,
  checkServerVersion,
  checkSharding,
  checkTopology,
  checkTransactions,
  PROBE_COLLECTION,
  topologyOf,
} from './checks.js';

/** Where the write probes go when no database is named (the probe collection is dropped, and the database with it). */
export const DOCTOR_DATABASE = 'loom_doctor';

/** The report of one `loom doctor` run. */
export interface DoctorReport {
  checks: CheckResult[];
}

/** Runs `check`; an error it did not expect fails that check with the server's words, and the run goes on. */
async function guarded(name: string, check: () => Promise<CheckResult> | CheckResult): Promise<CheckResult> {
  try {
    return await check();
  } catch (err) {
    return fail(name, `could not check: ${firstLine(err)}`, { error: firstLine(err) });
  }
}

/** The write checks on a scratch collection, created first and dropped after, whatever they find. */
async function probeChecks(client: MongoClient, db: Db, topology: ReturnType<typeof topologyOf>): Promise<CheckResult[]> {
  const probe = db.collection(PROBE_COLLECTION);
  const results: CheckResult[] = [];
  try {
    // Created outside the transaction: MongoDB before 4.4 cannot create a collection inside one.
    await probe.drop().catch(() => {});
    await db.createCollection(PROBE_COLLECTION);
    results.push(await guarded('transactions', () => checkTransactions(client, probe, topology)));
    results.push(await guarded('change streams', () => checkChangeStreams(probe, topology)));
    results.push(await guarded("w: 'majority'", () => checkMajorityWrites(probe)));
  } catch (err) {
    // The same three lines in every report: each write check failed for the same reason.
    const cause = `cannot create the scratch collection ${db.databaseName}.${PROBE_COLLECTION}: ${firstLine(err)}; doctor's user needs readWrite on that database`;
    for (const name of ['transactions', 'change streams', "w: 'majority'"]) if (!results.some((r) => r.name === name)) results.push(fail(name, cause));
  } finally {
    await probe.drop().catch(() => {});
  }
  return results;
}

/**
 * Checks a deployment for Loom: topology, server version, transactions, change streams,
 * `w: 'majority'`, Loom's indexes in `database`, this host's clock, the round trip to the server
 * and the sharding of Loom's collections. Resolves with every check; an unreachable server is one
 * failed `connection` check.
 */
export async function runDoctor(target: { uri: string; database?: string }, prefix: string): Promise<DoctorReport> {
  let client: MongoClient;
  try {
    client = await openClient(target.uri, 'loom-doctor');
  } catch (err) {
    if (!(err instanceof UnreachableError)) throw err;
    return {
      checks: [
        fail('connection', `${err.message}: check the URI, that the server runs, and that this host may reach it (firewall, IP allow list, TLS options)`),
      ],
    };
  }
  try {
    const db = client.db(target.database ?? DOCTOR_DATABASE);
    const hello = await db.admin().command({ hello: 1 });
    const topology = topologyOf(hello);
    const checks: CheckResult[] = [checkTopology(hello)];
    checks.push(await guarded('server version', () => checkServerVersion(db)));
    checks.push(...(await probeChecks(client, db, topology)));
    const noDatabase = (name: string) => warn(name, `no database named: pass --database (or set LOOM_DATABASE) to check the ${name} of your Loom store`);
    checks.push(target.database === undefined ? noDatabase('indexes') : await guarded('indexes', () => checkIndexes(db, prefix)));
    checks.push(await guarded('clock', () => checkClock(db)));
    checks.push(await guarded('round trip', () => checkRoundTrip(db)));
    checks.push(
      target.database === undefined ? noDatabase('sharding') : await guarded('sharding', () => checkSharding(client, target.database!, prefix, topology)),
    );
    return { checks };
  } finally {
    await client.close().catch(() => {});
  }
}

/** The report as text: one line per check, then the tally. */
export function formatDoctor(report: DoctorReport, target: { uri: string; database?: string }): string {
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = [`loom doctor: ${redactUri(target.uri)}${target.database === undefined ? '' : `, database '${target.database}'`}`];
  for (const check of report.checks) lines.push(`${check.status.toUpperCase().padEnd(4)}  ${check.name.padEnd(width)}  ${check.message}`);
  const count = (status: CheckResult['status']) => report.checks.filter((c) => c.status === status).length;
  lines.push(`${count('pass')} passed, ${count('warn')} warned, ${count('fail')} failed`);
  return `${lines.join('\n')}\n`;
}
