import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The measurement groups, in the order they run; `--only` picks some. */
export const GROUPS = [
  'memory',
  'throughput',
  'batched',
  'latency',
  'latency-loaded',
  'claim',
  'list',
  'bullmq',
  'flow',
  'sandbox',
  'sharded',
  'dag',
  'scaling',
  'payload',
] as const;
export type Group = (typeof GROUPS)[number];

/** The payload sizes of group `payload`, in KiB. */
export const PAYLOAD_KBS = [10, 100, 1024] as const;
export type PayloadKb = (typeof PAYLOAD_KBS)[number];

/** Sizes of one benchmark run. */
export interface BenchConfig {
  quick: boolean;
  /** Runs per figure; each figure is the median of them (3 by default, 1 in quick mode). */
  runs: number;
  out: string;
  groups: Group[];
  concurrency: number;
  throughputJobs: number;
  batchChunk: number;
  latencyJobs: number;
  latencyRatePerSec: number;
  /** Agenda's lowest sensible `processEvery`, next to its default (5 s). */
  agendaFastPollMs: number;
  memoryJobs: number;
  memoryChunk: number;
  claimSmall: number;
  claimLarge: number;
  /** Due jobs of a saturated or unknown name ahead of the claimable ones (claim cost, blocked side). */
  claimBlocked: number;
  claimLoadBudgetMs: number;
  claimsPerRound: number;
  /** Flow control: engine processes, seconds of the rate run, jobs of the global-concurrency run. */
  flowEngines: number;
  flowRateSeconds: number;
  flowGlobalJobs: number;
  /** Jobs per variant of the engine-level claim cost of a flow-limited queue. */
  flowQueueJobs: number;
  /** Sandbox group: how long each of the two CPU-bound handlers burns. */
  sandboxBurnMs: number;
  /** Sandbox group: no-op jobs per mode (sandboxed, in-thread) for the overhead per job. */
  sandboxNoopJobs: number;
  /** Group `latency-loaded`: busy processes spinning beside the engine (one per core of this machine's 2). */
  latencyHogs: number;
  /** Scaling curves: Loom's jobs per point, Agenda's (it runs ~50 jobs/s), BullMQ's. */
  scalingJobs: number;
  scalingAgendaJobs: number;
  scalingBullmqJobs: number;
  /** Group `payload`: jobs per run at 10 KiB, 100 KiB and 1 MiB payloads. */
  payloadJobs: Record<PayloadKb, number>;
  /** Per scenario: a run that takes longer fails the benchmark. */
  timeoutMs: number;
  /** `--profile DIR`: every child (and the emulator) runs under `node --cpu-prof` writing there. */
  profileDir?: string;
  /** `--merge FILE`: figures of an earlier results file that this run does not measure are kept. */
  merge?: string;
}

const RESULTS = fileURLToPath(new URL('../results/', import.meta.url));

/** Reads `--quick`, `--runs N`, `--only a,b`, `--out FILE`, `--profile DIR`, `--merge FILE` and `BENCH_QUICK` / `BENCH_RUNS`. */
export function readConfig(argv: string[], env: NodeJS.ProcessEnv): BenchConfig {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      runs: { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string' },
      profile: { type: 'string' },
      merge: { type: 'string' },
    },
  });
  const quick = values.quick || env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true';
  const runs = Number(values.runs ?? env.BENCH_RUNS ?? (quick ? 1 : 3));
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs / BENCH_RUNS must be an integer >= 1, got ${values.runs ?? env.BENCH_RUNS}`);
  const groups = values.only === undefined ? [...GROUPS] : values.only.split(',').map((g) => g.trim());
  for (const g of groups) if (!(GROUPS as readonly string[]).includes(g)) throw new Error(`--only: unknown group "${g}"; known: ${GROUPS.join(', ')}`);
  const sizes = quick
    ? {
        throughputJobs: 300,
        batchChunk: 100,
        latencyJobs: 20,
        latencyRatePerSec: 50,
        memoryJobs: 5_000,
        memoryChunk: 1_000,
        claimSmall: 100,
        claimLarge: 5_000,
        claimBlocked: 2_000,
        claimLoadBudgetMs: 20_000,
        claimsPerRound: 20,
        flowEngines: 4,
        flowRateSeconds: 10,
        flowGlobalJobs: 100,
        flowQueueJobs: 300,
        sandboxBurnMs: 2_000,
        sandboxNoopJobs: 200,
        scalingJobs: 200,
        scalingAgendaJobs: 40,
        scalingBullmqJobs: 200,
        payloadJobs: { 10: 100, 100: 50, 1024: 20 },
        timeoutMs: 60_000,
      }
    : {
        throughputJobs: 10_000,
        batchChunk: 1_000,
        latencyJobs: 200,
        latencyRatePerSec: 20,
        memoryJobs: 100_000,
        memoryChunk: 1_000,
        claimSmall: 1_000,
        claimLarge: 1_000_000,
        claimBlocked: 20_000,
        claimLoadBudgetMs: 150_000,
        claimsPerRound: 200,
        flowEngines: 4,
        flowRateSeconds: 60,
        flowGlobalJobs: 2_000,
        flowQueueJobs: 3_000,
        sandboxBurnMs: 2_000,
        sandboxNoopJobs: 2_000,
        scalingJobs: 3_000,
        scalingAgendaJobs: 1_000,
        scalingBullmqJobs: 3_000,
        payloadJobs: { 10: 2_000, 100: 1_000, 1024: 200 },
        timeoutMs: 900_000,
      };
  return {
    quick,
    runs,
    out: values.out ?? `${RESULTS}${quick ? 'quick.json' : 'latest.json'}`,
    groups: groups as Group[],
    concurrency: 50,
    agendaFastPollMs: 100,
    latencyHogs: 2,
    ...sizes,
    ...(values.profile === undefined ? {} : { profileDir: resolve(values.profile) }),
    ...(values.merge === undefined ? {} : { merge: resolve(values.merge) }),
  };
}
