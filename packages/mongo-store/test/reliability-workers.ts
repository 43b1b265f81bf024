import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from '@jest/globals';
import { MongoClient, type Db } from 'mongodb';
import { readLedgers } from '../../../chaos/src/ledger.js';
import { spawnNode, type NodeProcess } from '../../../chaos/src/node-process.js';
import { judge, type OracleVerdict } from '../../../chaos/src/oracle.js';
import { readRunRecord } from '../../../chaos/src/run-record.js';
import { buildPackages, buildScripts } from './processes/children.js';

export { exitWithin } from './processes/children.js';

// The reliability scenarios run real processes from compiled JavaScript, as `npm run chaos` does:
// a process then starts in a few seconds instead of the half minute it takes to transpile the
// sources on a busy machine (the reason the suite stays short enough for CI). The build is
// incremental: `npm test` has just built the packages, so usually only chaos/ compiles.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let ledgers: string | undefined;

/** Generous: a busy CI machine can be slow to start even compiled processes. */
export const STARTUP_MS = 60_000;
/** How long the incremental build may take. */
export const BUILD_MS = 240_000;

/** Builds the packages (incrementally) and chaos/ (when a source is newer than its output). */
export function buildChaos(): void {
  buildPackages();
  buildScripts(join(ROOT, 'chaos/tsconfig.json'), join(ROOT, 'chaos/src'), join(ROOT, 'chaos/dist'));
}

/** A compiled chaos script (chaos/dist/<name>.js) as a child process. */
export function startChaosScript(name: string, env: Record<string, string>): NodeProcess {
  return spawnNode(join(ROOT, `chaos/dist/${name}.js`), [], env, []);
}

export interface ChaosWorker extends NodeProcess {
  owner: string;
}

/** Starts a chaos worker named `owner` on `database`; env overrides its defaults (see chaos/src/worker.ts). */
export function startChaosWorker(uri: string, database: string, owner: string, env: Record<string, string> = {}): ChaosWorker {
  ledgers ??= mkdtempSync(join(tmpdir(), 'loom-reliability-'));
  const child = startChaosScript('worker', { MONGODB_URI: uri, DATABASE: database, OWNER: owner, LEDGER: join(ledgers, `${database}.${owner}.jsonl`), ...env });
  return Object.assign(child, { owner });
}

/**
 * The chaos oracle's verdict on `database` (see chaos/src/oracle.ts): its jobs, dead letters,
 * effects log and transactional effect, against the ledgers of the workers started on it.
 */
export async function verdictOf(db: Db, keys: readonly string[]): Promise<OracleVerdict> {
  return judge(await readRunRecord(db, keys, ledgers ? readLedgers(ledgers, `${db.databaseName}.`) : []));
}

/** What a passing verdict looks like, for `toMatchObject` (a failure then shows the examples). */
export const CLEAN = { lost: 0, duplicateEffects: 0, txEffectDuplicates: 0, staleAcks: 0 } as const;

export const keysFrom = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/**
 * The build, then the emulator run by its bin for one test file (in `beforeAll`), a client on it,
 * and the child processes to kill when the file is done.
 */
export interface EmulatorProcessFixture {
  readonly uri: string;
  readonly client: MongoClient;
  /** Kills `child` with SIGKILL after the file's tests, if it still runs. */
  track<C extends NodeProcess>(child: C): C;
  /** Runs after the file's tests, before the emulator stops. */
  onCleanup(fn: () => Promise<void>): void;
}

export function useEmulatorProcess(): EmulatorProcessFixture {
  let emulator: { uri: string; child: NodeProcess } | undefined;
  let client: MongoClient | undefined;
  const children: NodeProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    buildChaos();
    const child = spawnNode(join(ROOT, 'packages/mongo-emulator/dist/bin.js'), ['--port', '0'], {}, []);
    emulator = { child, uri: await child.waitForLine(/^mongodb:\/\//, STARTUP_MS) };
    client = new MongoClient(emulator.uri);
    await client.connect();
  }, BUILD_MS + STARTUP_MS);
  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')));
    for (const fn of cleanups) await fn();
    await client?.close();
    await emulator?.child.kill('SIGTERM');
    if (ledgers) rmSync(ledgers, { recursive: true, force: true });
  });
  const need = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the emulator exists only inside tests');
    return value;
  };
  return {
    get uri() {
      return need(emulator).uri;
    },
    get client() {
      return need(client);
    },
    track(child) {
      children.push(child);
      return child;
    },
    onCleanup(fn) {
      cleanups.push(fn);
    },
  };
}
