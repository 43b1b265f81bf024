import type { DeadLetters, Jobs, JobStore, Queues, StoredSchedules, Tokens, Workers } from '@loom/core';
import type { Invocation } from '../args.js';
import type { Output } from '../output.js';

/** What a command works with: the store's operations (as `loom.*` offers them) and where to print. */
export interface CommandContext {
  store: JobStore;
  jobs: Jobs;
  queues: Queues;
  deadLetters: DeadLetters;
  schedules: StoredSchedules;
  tokens: Tokens;
  workers: Workers;
  output: Output;
  invocation: Invocation;
  /** Asks the person at the terminal a yes/no question; absent when stdin or stderr is not a terminal. */
  confirm?: (question: string) => Promise<boolean>;
}
