/** One chaos run's shape. `full` is `npm run chaos`; `ci` is the short run CI does in jest. */
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
}

/**
 * mongod's transactionLifetimeLimitSeconds (the emulator's too). A worker SIGKILLed between its
 * `ctx.transaction`'s completion write and the commit leaves the job's document locked until the
 * server aborts the transaction this long after it began; until then every claim that reaches that
 * document waits, and the workers stall (the controller logs such stalls). Each kill may cost this.
 */
export const TRANSACTION_LIFETIME_MS = 60_000;

const PROFILES: Record<'full' | 'ci', ChaosConfig> = {
  full: { jobs: 10_000, workers: 4, concurrency: 8, kills: 50, pauses: 20, leaseMs: 1500, pauseMs: 4000, maxDelayMs: 30, batches: 20, deadlineMs: 30 * 60_000 + 50 * TRANSACTION_LIFETIME_MS, startupMs: 120_000 },
  ci: { jobs: 400, workers: 2, concurrency: 4, kills: 4, pauses: 2, leaseMs: 1500, pauseMs: 4000, maxDelayMs: 30, batches: 4, deadlineMs: 150_000 + 4 * TRANSACTION_LIFETIME_MS, startupMs: 120_000 },
};

const ENV: Record<string, keyof ChaosConfig> = {
  CHAOS_JOBS: 'jobs',
  CHAOS_WORKERS: 'workers',
  CHAOS_CONCURRENCY: 'concurrency',
  CHAOS_KILLS: 'kills',
  CHAOS_PAUSES: 'pauses',
  CHAOS_LEASE_MS: 'leaseMs',
  CHAOS_PAUSE_MS: 'pauseMs',
};

/** `--ci` (or CHAOS_PROFILE=ci) picks the short run; CHAOS_JOBS, CHAOS_KILLS... override fields. */
export function chaosConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ChaosConfig {
  const profile = argv.includes('--ci') || env.CHAOS_PROFILE === 'ci' ? 'ci' : 'full';
  const config = { ...PROFILES[profile] };
  for (const [name, field] of Object.entries(ENV)) {
    const raw = env[name];
    if (raw === undefined) continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < (field === 'kills' || field === 'pauses' ? 0 : 1)) throw new Error(`${name} must be a positive integer, got '${raw}'`);
    config[field] = value;
  }
  return config;
}
