import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import { DeadLetters, Jobs, LoomError, Queues, StoredSchedules, SystemClock, Tokens, Workers } from '@loom/core';
import { HELP, parseInvocation, type Invocation } from './args.js';
import { exportJob, forkJob, listJobs, showJob, showJobLogs } from './commands/jobs.js';
import { cancelJobs, cleanJobs, needsConfirmation, removeJobs, retryJobs, runJobsNow } from './commands/bulk-jobs.js';
import type { CommandContext } from './commands/context.js';
import { listDeadLetters, purgeDeadLetters, retryDeadLetters } from './commands/dead-letters.js';
import { listQueues, pauseQueue, stats } from './commands/queues.js';
import { listSchedules, steerSchedule } from './commands/schedules.js';
import { showBatch } from './commands/batches.js';
import { settleToken } from './commands/tokens.js';
import { listWorkers } from './commands/workers.js';
import { connect, firstLine, redactUri, resolveTarget, type Connection } from './connection.js';
import { diagnosticName } from './diagnostics/args.js';
import { runDiagnostic } from './diagnostics/run.js';
import { parseShardPlanArgs, renderShardPlan } from './commands/shard-plan.js';
import type { Output } from './output.js';
import { RefusedError, UnreachableError, UsageError } from './errors.js';
import { USAGE } from './usage.js';

/** Where `runLoom` reads and writes: the process's, or a test's. */
export interface LoomIo {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stderr is a terminal. */
  interactive?: boolean;
  /**
   * Asks a yes/no question on the terminal (the binary: when stdin and stderr are terminals).
   * Without it, an action on every job of a filter needs `--yes` (or `--dry-run`).
   */
  confirm?: (question: string) => Promise<boolean>;
}

/** Exit codes: done; the thing asked for does not exist or cannot change; bad usage or no database. */
export const EXIT = { ok: 0, refused: 1, usage: 2 } as const;

const HANDLERS: Record<Invocation['name'], (ctx: CommandContext) => Promise<void>> = {
  stats,
  'jobs ls': listJobs,
  'jobs show': showJob,
  'jobs cancel': cancelJobs,
  'jobs retry': retryJobs,
  'jobs rm': removeJobs,
  'jobs remove': removeJobs,
  'jobs run-now': runJobsNow,
  'jobs clean': cleanJobs,
  'jobs fork': forkJob,
  'jobs logs': showJobLogs,
  'jobs export': exportJob,
  'dlq ls': listDeadLetters,
  'dlq retry': retryDeadLetters,
  'dlq purge': purgeDeadLetters,
  'queues ls': listQueues,
  'queues pause': (ctx) => pauseQueue(ctx, true),
  'queues resume': (ctx) => pauseQueue(ctx, false),
  'schedules ls': listSchedules,
  'schedules pause': (ctx) => steerSchedule(ctx, 'pause'),
  'schedules resume': (ctx) => steerSchedule(ctx, 'resume'),
  'schedules trigger': (ctx) => steerSchedule(ctx, 'trigger'),
  'batches show': showBatch,
  'tokens complete': (ctx) => settleToken(ctx, 'complete'),
  'tokens reject': (ctx) => settleToken(ctx, 'reject'),
  'workers ls': listWorkers,
};

/**
 * Runs one `loom` command line and resolves with its exit code. The whole line is checked before
 * anything connects, so a usage error (exit 2) reads and changes nothing.
 */
export async function runLoom(argv: readonly string[], io: LoomIo): Promise<number> {
  const fail = (code: number, message: string): number => {
    io.stderr(`loom: ${message}\n`);
    return code;
  };
  // `doctor` and `selftest` check a deployment rather than steer a store: own options, own exit rules.
  // `shard-plan` prints commands for an operator to run: it connects to nothing.
  if (argv[0] === 'shard-plan' && !argv.includes('--help') && !argv.includes('-h')) {
    try {
      io.stdout(renderShardPlan(parseShardPlanArgs(argv, io.env)));
      return EXIT.ok;
    } catch (err) {
      if (err instanceof UsageError) return fail(EXIT.usage, `${err.message} (loom --help shows the commands)`);
      throw err;
    }
  }
  const diagnostic = diagnosticName(argv);
  if (diagnostic !== undefined && !argv.includes('--help') && !argv.includes('-h')) return runDiagnostic(diagnostic, argv, io);
  let invocation: Invocation;
  let target: ReturnType<typeof resolveTarget>;
  try {
    const parsed = parseInvocation(argv);
    if (parsed === HELP) {
      io.stdout(USAGE);
      return EXIT.ok;
    }
    invocation = parsed;
    if (needsConfirmation({ invocation }) && (io.confirm === undefined || invocation.global.json)) {
      throw new UsageError(`'${invocation.name}' with a filter changes every matching job: add --yes to confirm, or --dry-run to see what would change`);
    }
    target = resolveTarget(invocation.global, io.env);
  } catch (err) {
    if (err instanceof UsageError) return fail(EXIT.usage, `${err.message} (loom --help shows the commands)`);
    throw err;
  }
  let connection: Connection | undefined;
  try {
    connection = await connect(target, (line) => io.stderr(`${line}\n`));
    const clock = new SystemClock();
    const { store } = connection;
    const output: Output = {
      out: (text) => io.stdout(text),
      err: (text) => io.stderr(text),
      interactive: io.interactive === true,
      json: invocation.global.json,
      now: clock.now(),
    };
    const ctx: CommandContext = {
      store,
      jobs: new Jobs({ store, clock }),
      queues: new Queues({ store, clock }),
      deadLetters: new DeadLetters({ store, clock, onReplayed: () => {} }),
      schedules: new StoredSchedules({ store, clock }),
      tokens: new Tokens({ store, clock }),
      workers: new Workers({ store, clock }),
      output,
      invocation,
      ...(io.confirm ? { confirm: io.confirm } : {}),
    };
    await HANDLERS[invocation.name](ctx);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof UnreachableError) return fail(EXIT.usage, err.message);
    if (err instanceof RefusedError) return fail(EXIT.refused, err.message);
    if (err instanceof UsageError) return fail(EXIT.usage, err.message);
    if (LoomError.is(err, 'INVALID_ARGUMENT')) return fail(EXIT.usage, `${err.message} (nothing was changed)`);
    if (LoomError.is(err)) return fail(EXIT.refused, err.message);
    if (err instanceof MongoServerSelectionError || err instanceof MongoNetworkError) {
      return fail(EXIT.usage, `lost MongoDB at ${redactUri(target.uri)}: ${firstLine(err)}`);
    }
    if (err instanceof MongoServerError && /hint/i.test(err.message)) {
      return fail(
        EXIT.refused,
        `the store in database '${target.database}' lacks Loom 0.2's indexes: start a Loom engine of this version on it once (its init() creates them)`,
      );
    }
    return fail(EXIT.refused, firstLine(err));
  } finally {
    await connection?.close().catch(() => {});
  }
}
