import { toMs } from '@loom/core';

/**
 * One chaos run's shape. `full` is `npm run chaos`; `ci` is the short run CI does in jest; `soak`
 * (`npm run chaos -- --soak 30m`) the long one.
 */
export interface ChaosConfig {
  jobs: number;
  workers: number;
  /** Per worker process. */
  concurrency: number;
  kills: number;
  pauses: number;
  leaseMs: number;
  /** How long a paused worker stays stopped: past its lease, so others take its jobs over. */
  pauseMs: number;
  /** Upper bound of each handler run's random delay. */
  maxDelayMs: number;
  /** The jobs are enqueued in this many batches (one `enqueueMany` each). */
  batches: number;
  /**
   * Give up (and fail) if the jobs are not all finished by then. Includes one
   * {@link TRANSACTION_LIFETIME_MS} per kill: see there.
   */
  deadlineMs: number;
  /** How long a worker process may take to start (the TypeScript hooks make it slow). */
  startupMs: number;
  /** A step-down of the primary (as in a replica-set election) every this many ms; 0: none. */
  stepDownEveryMs: number;
  /** How long each step-down leaves the set without a primary. */
  stepDownMs: number;
  /**
   * A soak: the jobs are enqueued evenly over this many ms (0: as fast as the workers take them),
   * mixed with workflows and a cron schedule, and the run reports memory, held flow slots, stuck
   * jobs and change-stream resumes (soak-report.ts).
   */
  soakMs: number;
  /**
   * `--sharded`: the emulator simulates a sharded cluster of this many virtual shards behind a
   * mongos, and Loom's jobs collection is sharded as `loom shard-plan` says; 0: a replica set.
   */
  shards: number;
  /** Partitions of every queue the chaos jobs use ({@link CHAOS_QUEUES}); 1: unpartitioned. */
  partitions: number;
}

/** The queues the chaos jobs run in (none of them names a queue). */
export const CHAOS_QUEUES = ['default'] as const;

/** What a run gives MongoStore's `partitions` option (and `loom shard-plan`): every chaos queue split `partitions` ways. */
export function chaosPartitions(partitions: number): Record<string, number> {
  return Object.fromEntries(CHAOS_QUEUES.map((queue) => [queue, partitions]));
}

/**
 * `--sharded`: 4 virtual shards, queues of 8 partitions (issue 30's set-up), and no step-downs:
 * `replSetStepDown` is a replica set member's command, which mongos does not have, and the
 * emulator does not simulate the election of a shard's primary.
 */
const SHARDED = { shards: 4, partitions: 8, stepDownEveryMs: 0 };

/**
 * mongod's transactionLifetimeLimitSeconds (the emulator's too). A worker SIGKILLed between its
 * `ctx.transaction`'s completion write and the commit leaves the job's document locked until the
 * server aborts the transaction this long after it began; until then every claim that reaches that
 * document waits, and the workers stall (the controller logs such stalls). Each kill may cost this.
 */
export const TRANSACTION_LIFETIME_MS = 60_000;

const NO_SOAK = { stepDownEveryMs: 0, stepDownMs: 3_000, soakMs: 0, shards: 0, partitions: 1 };

const PROFILES: Record<'full' | 'ci', ChaosConfig> = {
  full: {
    jobs: 10_000,
    workers: 4,
    concurrency: 8,
    kills: 50,
    pauses: 20,
    leaseMs: 1500,
    pauseMs: 4000,
    maxDelayMs: 30,
    batches: 20,
    deadlineMs: 30 * 60_000 + 50 * TRANSACTION_LIFETIME_MS,
    startupMs: 120_000,
    ...NO_SOAK,
    stepDownEveryMs: 20_000,
  },
  ci: {
    jobs: 400,
    workers: 2,
    concurrency: 4,
    kills: 4,
    pauses: 2,
    leaseMs: 1500,
    pauseMs: 4000,
    maxDelayMs: 30,
    batches: 4,
    deadlineMs: 150_000 + 4 * TRANSACTION_LIFETIME_MS,
    startupMs: 120_000,
    ...NO_SOAK,
  },
};

/**
 * A soak of `soakMs`: about 110 jobs a second (200,000 in 30 minutes), a kill every 40 s, a pause
 * every 90 s and a step-down every 20 s, spread over the whole run; leases of 5 s.
 */
function soakProfile(soakMs: number): ChaosConfig {
  const minutes = soakMs / 60_000;
  return {
    jobs: Math.max(1_000, Math.round(minutes * 6_700)),
    workers: 4,
    concurrency: 16,
    kills: Math.round(minutes * 1.5),
    pauses: Math.round(minutes * 0.66),
    // Longer than the short runs': a soak keeps 64 runs and a cron in flight on a small machine,
    // where a 1.5 s lease expires under its own load, not because of a fault.
    leaseMs: 5000,
    pauseMs: 10_000,
    maxDelayMs: 5,
    batches: Math.max(10, Math.round(soakMs / 5_000)),
    deadlineMs: soakMs * 1.5 + 10 * 60_000,
    startupMs: 120_000,
    stepDownEveryMs: 20_000,
    stepDownMs: 3_000,
    soakMs,
    shards: 0,
    partitions: 1,
  };
}

const ENV: Record<string, keyof ChaosConfig> = {
  CHAOS_JOBS: 'jobs',
  CHAOS_WORKERS: 'workers',
  CHAOS_CONCURRENCY: 'concurrency',
  CHAOS_KILLS: 'kills',
  CHAOS_PAUSES: 'pauses',
  CHAOS_LEASE_MS: 'leaseMs',
  CHAOS_PAUSE_MS: 'pauseMs',
  CHAOS_STEPDOWN_EVERY_MS: 'stepDownEveryMs',
  CHAOS_STEPDOWN_MS: 'stepDownMs',
};

/** Read only with `--sharded`. */
const SHARDED_ENV: Record<string, keyof ChaosConfig> = {
  CHAOS_SHARDS: 'shards',
  CHAOS_PARTITIONS: 'partitions',
};

/** Fields that may be 0 (no such fault). */
const MAY_BE_ZERO = new Set<keyof ChaosConfig>(['kills', 'pauses', 'stepDownEveryMs']);

/**
 * `--ci` (or CHAOS_PROFILE=ci) picks the short run, `--soak <duration>` (e.g. `30m`) the soak;
 * `--sharded` (or CHAOS_SHARDED=1) runs the full or short run on an emulated sharded cluster;
 * CHAOS_JOBS, CHAOS_KILLS... override fields (CHAOS_SHARDS and CHAOS_PARTITIONS with `--sharded`).
 */
export function chaosConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ChaosConfig {
  const soakAt = argv.indexOf('--soak');
  const sharded = argv.includes('--sharded') || env.CHAOS_SHARDED === '1';
  let config: ChaosConfig;
  if (sharded && soakAt >= 0) throw new Error('--sharded runs the full or the short (--ci) profile, not a soak');
  if (soakAt >= 0) {
    const raw = argv[soakAt + 1];
    let soakMs: number;
    try {
      soakMs = toMs(raw ?? '');
    } catch {
      throw new Error(`--soak takes a duration such as 30m or 2h, got '${raw ?? ''}'`);
    }
    if (soakMs < 60_000) throw new Error(`--soak must be at least 1m, got '${raw}'`);
    config = soakProfile(soakMs);
  } else {
    config = { ...PROFILES[argv.includes('--ci') || env.CHAOS_PROFILE === 'ci' ? 'ci' : 'full'], ...(sharded ? SHARDED : {}) };
  }
  for (const [name, field] of Object.entries({ ...ENV, ...(sharded ? SHARDED_ENV : {}) })) {
    const raw = env[name];
    if (raw === undefined) continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < (MAY_BE_ZERO.has(field) ? 0 : 1)) throw new Error(`${name} must be a positive integer, got '${raw}'`);
    config[field] = value;
  }
  if (config.shards > 0 && config.stepDownEveryMs > 0)
    throw new Error(
      'CHAOS_STEPDOWN_EVERY_MS: a sharded run has no step-downs (mongos has no replSetStepDown, and the emulator does not simulate a shard electing a new primary)',
    );
  return config;
}
