import { randomBytes } from 'node:crypto';
import type { MongoClient } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import { runStoreConformance, type ConformanceCaseResult } from '@loom/testing/conformance-runner';
import type { LoomIo } from '../cli.js';
import { redactUri } from '../connection.js';
import { openClient } from '../diagnostics/client.js';
import type { DiagnosticInvocation } from '../diagnostics/args.js';
import { runChaos, type ChaosSummary } from './chaos.js';

/** What `loom selftest --json` prints. */
export interface SelftestReport {
  database: string;
  topology: 'replica set' | 'sharded' | 'standalone';
  conformance: { passed: number; failed: number; skipped: number; failures: { name: string; error: string }[] };
  chaos: ChaosSummary;
  passed: boolean;
}

const QUIET = { debug: () => {}, warn: () => {}, error: () => {} };

/** Drops the collections of `database` whose names start with `prefix`: only what this run created. */
async function dropCreated(client: MongoClient, database: string, prefix: string): Promise<void> {
  const db = client.db(database);
  const names = await db.listCollections({}, { nameOnly: true }).toArray();
  for (const { name } of names)
    if (name.startsWith(prefix))
      await db
        .collection(name)
        .drop()
        .catch(() => {});
}

function conformanceTally(results: ConformanceCaseResult[]): SelftestReport['conformance'] {
  const failures = results.filter((r) => !r.passed).map((r) => ({ name: r.name, error: r.error ?? '' }));
  const skipped = results.filter((r) => r.skipped).length;
  return { passed: results.length - failures.length - skipped, failed: failures.length, skipped, failures };
}

function formatReport(report: SelftestReport): string {
  const { conformance: c, chaos } = report;
  const lines = [
    `loom selftest: database '${report.database}' on a ${report.topology}`,
    `conformance: ${c.passed} passed, ${c.failed} failed${c.skipped > 0 ? `, ${c.skipped} skipped` : ''}`,
    ...c.failures.map((f) => `  FAIL ${f.name}\n    ${f.error.split('\n').join('\n    ')}`),
    `chaos: ${Math.round(chaos.durationMs / 1000)} s, 2 engines, ${chaos.kills} SIGKILL (${chaos.runningAtKill} job(s) in flight): ` +
      `enqueued ${chaos.enqueued}, completed ${chaos.completed}, lost ${chaos.lost}, dead ${chaos.dead}, duplicate completions ${chaos.duplicateCompletions}` +
      (report.topology === 'standalone' ? `, re-runs ${chaos.reruns} (at-least-once without transactions)` : ''),
    ...chaos.engineErrors.map((e) => `  engine error: ${e}`),
    report.passed ? 'PASSED' : 'FAILED',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * `loom selftest`: the store conformance suite, then a chaos run of two engine processes, in a
 * scratch database. Refuses a database holding collections unless `--force`; creates only
 * collections under a prefix of its own and drops them (and the database, when it was empty) at
 * the end. Resolves with the exit code: 0 everything passed, 1 a failure, 2 refused.
 */
export async function runSelftest(options: DiagnosticInvocation & { uri: string; database: string }, io: LoomIo): Promise<number> {
  const { uri, database } = options;
  const progress = (line: string) => io.stderr(`${line}\n`);
  const client = await openClient(uri, 'loom-selftest');
  const runPrefix = `selftest_${randomBytes(3).toString('hex')}_`;
  let wasEmpty = false;
  try {
    const db = client.db(database);
    const existing = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    if (existing.length > 0 && !options.force) {
      const shown = existing.slice(0, 5).join(', ') + (existing.length > 5 ? `, and ${existing.length - 5} more` : '');
      io.stderr(
        `loom: database '${database}' at ${redactUri(uri)} holds ${existing.length} collection(s) (${shown}): selftest needs a scratch database; name an empty one, or pass --force (selftest then drops only the collections it creates, under '${runPrefix}')\n`,
      );
      return 2;
    }
    wasEmpty = existing.length === 0;
    const hello = await db.admin().command({ hello: 1 });
    const topology: SelftestReport['topology'] = hello.msg === 'isdbgrid' ? 'sharded' : typeof hello.setName === 'string' ? 'replica set' : 'standalone';
    const transactions = topology !== 'standalone';

    progress(`selftest: store conformance suite in '${database}' (${topology}${transactions ? '' : ', without transactions'})`);
    let cases = 0;
    const results = await runStoreConformance(
      `MongoStore (${topology})`,
      () => {
        const prefix = `${runPrefix}c${++cases}_`;
        const open = () => new MongoStore({ client, database, collectionPrefix: prefix, logger: QUIET, retention: { completed: false } });
        return { store: open(), peer: open, cleanup: () => dropCreated(client, database, prefix) };
      },
      {
        transactions,
        timeoutMs: 120_000,
        onResult: (r) => {
          if (!r.passed) progress(`  FAIL ${r.name}: ${(r.error ?? '').split('\n')[0]}`);
        },
      },
    );
    const conformance = conformanceTally(results);
    progress(`selftest: conformance ${conformance.passed} passed, ${conformance.failed} failed; chaos run for ${Math.round(options.durationMs / 1000)} s`);
    const chaos = await runChaos({ client, uri, database, prefix: `${runPrefix}chaos_`, durationMs: options.durationMs, transactions, log: progress });
    const report: SelftestReport = { database, topology, conformance, chaos, passed: conformance.failed === 0 && chaos.passed };
    io.stdout(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return report.passed ? 0 : 1;
  } finally {
    try {
      await dropCreated(client, database, runPrefix);
      if (wasEmpty && (await client.db(database).listCollections({}, { nameOnly: true }).toArray()).length === 0) await client.db(database).dropDatabase();
    } finally {
      await client.close().catch(() => {});
    }
  }
}
