import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';

// `loom selftest` through the built binary (packages/cli/dist/bin.js, from `npm run build`): its
// chaos run starts engine processes from dist/selftest/chaos-worker.js. Real timers run inside the
// command (its 5 s chaos run, the engines' leases); the test waits only for the process to end and
// asserts on its exit code and summary.
const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(async () => {
  await mongo?.stop();
});

/** The conformance suite, 2 engines for 5 s and their drain, on a loaded 2-core machine: a deadline against a hang. */
const SELFTEST_MS = 600_000;

function loomBinary(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { PATH: process.env.PATH }, timeout: SELFTEST_MS - 30_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

interface Report {
  topology: string;
  conformance: { passed: number; failed: number; failures: { name: string; error: string }[] };
  chaos: {
    enqueued: number;
    completed: number;
    lost: number;
    dead: number;
    duplicateCompletions: number;
    kills: number;
    engineErrors: string[];
    passed: boolean;
  };
  passed: boolean;
}

describe('loom selftest', () => {
  it(
    'refuses a database holding other data; with --force runs the suite and the chaos run, loses nothing and drops only what it created',
    async () => {
      const database = mongo.newDatabaseName('selftest');
      const db = mongo.client.db(database);
      await db.collection('orders').insertOne({ order: 1 });

      const refused = await loomBinary(['selftest', '--uri', mongo.uri, '--database', database, '--duration', '5s']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/holds 1 collection\(s\) \(orders\).*--force/);
      expect((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name)).toEqual(['orders']);

      const run = await loomBinary(['selftest', '--uri', mongo.uri, '--database', database, '--duration', '5s', '--force', '--json']);
      const report = JSON.parse(run.stdout) as Report;
      expect(report.topology).toBe('replica set');
      expect(report.conformance.passed).toBeGreaterThan(200);
      expect(report.conformance.failures).toEqual([]);
      expect(report.conformance.failed).toBe(0);
      expect(report.chaos).toMatchObject({ lost: 0, dead: 0, duplicateCompletions: 0, kills: 1, engineErrors: [], passed: true });
      expect(report.chaos.enqueued).toBeGreaterThan(0);
      expect(report.chaos.completed).toBe(report.chaos.enqueued);
      expect(run.code).toBe(0);
      expect(report.passed).toBe(true);

      // Only the collections it created are gone; the user's are untouched.
      expect((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name)).toEqual(['orders']);
      expect(await db.collection('orders').countDocuments({ order: 1 })).toBe(1);
    },
    SELFTEST_MS,
  );
});
