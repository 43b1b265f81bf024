import type { CommandCounts } from './command-counter.js';

/** Which MongoDB a scenario talks to, and the database it may use (and drop) alone. */
export interface MongoTargetRef {
  uri: string;
  db: string;
  /**
   * The server's pid when it is a local process (the emulator): scenarios then report its CPU per
   * job over their measured window, the load each engine puts on the server, which a busy machine
   * disturbs far less than wall-clock rates.
   */
  serverPid?: number;
}

/** One measurement, run in a child process of its own so its memory and CPU are its own. */
export type ScenarioSpec =
  | ({ kind: 'throughput'; engine: 'loom' | 'agenda'; jobs: number; concurrency: number; timeoutMs: number } & MongoTargetRef)
  | ({ kind: 'batched'; jobs: number; concurrency: number; chunk: number; timeoutMs: number } & MongoTargetRef)
  | ({ kind: 'latency'; engine: 'loom' | 'agenda'; jobs: number; ratePerSec: number; processEveryMs?: number; timeoutMs: number } & MongoTargetRef)
  | { kind: 'memory'; jobs: number; concurrency: number; chunk: number; timeoutMs: number }
  | ({
      kind: 'claim-cost';
      small: number;
      large: number;
      blocked: number;
      loadBudgetMs: number;
      claims: number;
      rounds: number;
      timeoutMs: number;
    } & MongoTargetRef)
  | ({ kind: 'list-cost'; small: number; large: number; loadBudgetMs: number; reps: number; rounds: number; timeoutMs: number } & MongoTargetRef)
  | ({ kind: 'flow-limits'; engines: number; rateSeconds: number; globalJobs: number; timeoutMs: number } & MongoTargetRef)
  | ({ kind: 'flow-claim-cost'; claims: number; rounds: number; timeoutMs: number } & MongoTargetRef)
  | ({ kind: 'flow-queue-cost'; jobs: number; concurrency: number; rounds: number; timeoutMs: number } & MongoTargetRef)
  | { kind: 'sandbox'; burnMs: number; noopJobs: number; timeoutMs: number }
  | ({ kind: 'flow-costs'; jobs: number; concurrency: number; timeoutMs: number } & MongoTargetRef)
  | ({ kind: 'scaling'; jobs: number; concurrency: number; queues: number; engines: number; timeoutMs: number } & MongoTargetRef)
  | ({
      kind: 'payload';
      payloadKb: number;
      jobs: number;
      concurrency: number;
      claims: number;
      listReps: number;
      /** MongoStore's offloadThreshold; absent: its default (256 KiB). */
      offloadThreshold?: number | false;
      timeoutMs: number;
    } & MongoTargetRef)
  | BullmqSpec;

/** The redis-server the benchmark started for BullMQ (its pid: its CPU per job is read like the emulator's). */
export interface RedisTargetRef {
  redisPort: number;
  redisPid: number;
}

/** BullMQ's runs: the same shapes as Loom's and Agenda's throughput and latency runs. */
export type BullmqSpec =
  | ({ kind: 'bullmq-throughput'; jobs: number; concurrency: number; timeoutMs: number } & RedisTargetRef)
  | ({ kind: 'bullmq-latency'; jobs: number; ratePerSec: number; timeoutMs: number } & RedisTargetRef);

/** What a scenario measured: named figures, the commands it sent, free-form notes. */
export interface ScenarioResult {
  metrics: Record<string, number>;
  commands?: CommandCounts;
  notes?: string[];
}

/** A scenario result as the child reports it, with the child's peak memory. */
export interface ChildReport extends ScenarioResult {
  maxRssMb: number;
}
