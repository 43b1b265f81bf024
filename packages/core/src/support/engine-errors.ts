import { LoomError } from './errors.js';

/** Two `@Job` classes claim one job name; raised by `Loom.create`. */
export class DuplicateJobNameError extends LoomError {
  constructor(readonly jobName: string, readonly firstClass: string, readonly secondClass: string) {
    super(
      'DUPLICATE_JOB_NAME',
      `Job name "${jobName}" is used by both ${firstClass} and ${secondClass}; give one of them another \`name\` in @Job({ name })`,
    );
  }
}

/** A class handed to the engine is not a usable job (no `@Job`, or no `run` method). */
export class InvalidJobClassError extends LoomError {
  constructor(readonly className: string, detail: string) {
    super('INVALID_JOB_CLASS', `Job class ${className} ${detail}`);
  }
}

/** A job class this engine does not know was used (enqueue, lookup). */
export class JobNotRegisteredError extends LoomError {
  constructor(readonly className: string) {
    super(
      'JOB_NOT_REGISTERED',
      `Job class ${className} is not registered with this Loom: decorate it with @Job and, if you pass \`jobs\` to Loom.create, list it there`,
    );
  }
}

/** An idempotency key that is not a non-empty string (objects are refused: that is how operator injection starts). */
export class InvalidIdempotencyKeyError extends LoomError {
  constructor(readonly jobName: string, detail: string) {
    super('INVALID_IDEMPOTENCY_KEY', `Invalid idempotency key for job "${jobName}": ${detail}; use a non-empty string of business identity`);
  }
}

/**
 * A `rateLimit.key`, `group.key` or `debounce.key` function threw or did not return a non-empty
 * string: the enqueue is refused and nothing is stored.
 */
export class InvalidFlowKeyError extends LoomError {
  constructor(readonly jobName: string, readonly option: 'rateLimit.key' | 'group.key' | 'debounce.key', detail: string) {
    super('INVALID_FLOW_KEY', `Job "${jobName}": its ${option} function ${detail}; it must return a non-empty string (at most 1024 characters). Nothing was enqueued`);
  }
}

/** A bad argument to an engine method or option. */
export class InvalidArgumentError extends LoomError {
  constructor(readonly argument: string, detail: string) {
    super('INVALID_ARGUMENT', `Invalid ${argument}: ${detail}`);
  }
}

/** The store has no transactions, but `{ session }` or `ctx.transaction` asked for one. */
export class TransactionsUnsupportedError extends LoomError {
  constructor(what: string) {
    super(
      'TRANSACTIONS_UNSUPPORTED',
      `${what} needs a store with transactions (store.withTransaction), and this store has none; use MongoStore on a replica set, or drop the transaction`,
    );
  }
}

/** An engine method was called in a state where it cannot work (e.g. `start` after `stop`). */
export class EngineStateError extends LoomError {
  constructor(detail: string) {
    super('ENGINE_STATE', detail);
  }
}

/** The reason `ctx.signal` aborts when the engine stops and the run outlives `shutdownGrace`. */
export class EngineStoppedError extends LoomError {
  constructor(readonly jobId: string) {
    super('ENGINE_STOPPED', `Job ${jobId}: the engine stopped and the run outlived shutdownGrace; the job was released for another worker`);
  }
}

/** One step name used twice in one run: steps are memoized by name, so names must be unique. */
export class DuplicateStepError extends LoomError {
  constructor(readonly jobId: string, readonly stepName: string) {
    super('DUPLICATE_STEP', `Job ${jobId}: step name "${stepName}" is used twice in one run; give every ctx.step / ctx.sleep its own name`);
  }
}

/** A replayed run reached a recorded step of another kind under the same name. */
export class NonDeterminismError extends LoomError {
  constructor(readonly jobId: string, readonly stepName: string, recorded: string, requested: string) {
    super(
      'NON_DETERMINISM',
      `Job ${jobId}: "${stepName}" was recorded as a ${recorded} but this run uses it as a ${requested}; a handler must reach its steps the same way on every attempt`,
    );
  }
}

/** A value the store must keep (step result, progress) is not plain data. */
export class NotPlainDataError extends LoomError {
  constructor(readonly what: string, readonly path: string, detail: string) {
    super('NOT_PLAIN_DATA', `${what} is not plain data at ${path || '(root)'}: ${detail}; return plain objects, arrays, strings, numbers, booleans, null or Date`);
  }
}

/** A handler threw something that is not an `Error` (a string, undefined, an object); this carries it. */
export class JobFailedError extends LoomError {
  constructor(message: string, readonly thrown: unknown) {
    super('JOB_FAILED', message);
  }
}

/**
 * A job whose stored record would pass the store's document limit: its payload, steps, errors,
 * signals and result together. Return less from the handler (store large results elsewhere and
 * return a reference), or keep less in steps.
 */
export class JobTooLargeError extends LoomError {
  constructor(readonly jobId: string, detail: string) {
    super('JOB_TOO_LARGE', `Job ${jobId}: ${detail}; store large data elsewhere (a bucket, a collection of your own) and keep a reference in the job`);
  }
}

/** The store refused an outcome write for good (not a lost lease, not a transient error): the attempt fails with this. */
export class OutcomeNotStoredError extends LoomError {
  constructor(readonly jobId: string, operation: string, cause: Error) {
    super('OUTCOME_NOT_STORED', `Job ${jobId}: the store refused to ${operation} it: ${cause.message}`, { cause });
  }
}

/** No job has the id given to `loom.jobs.cancel`, `retry` or `remove` (it never existed, or was removed). */
export class JobNotFoundError extends LoomError {
  constructor(readonly jobId: string) {
    super('JOB_NOT_FOUND', `No job has id ${JSON.stringify(jobId)}: check the id (\`loom.jobs.list\` finds jobs), or it was removed`);
  }
}
