import { describe, expect, it } from '@jest/globals';
import * as core from '@loom/core';
import { LoomError } from '@loom/core';

// Every error class @loom/core exports, built once: its `code` is how callers tell it apart
// (`LoomError.is(err, code)`), so two classes may share a code only when one refines the other
// (StepOrderError is a NonDeterminismError). A new error class must be added here.
const samples: Record<string, () => LoomError> = {
  PermanentError: () => new core.PermanentError('no'),
  RateLimitedError: () => new core.RateLimitedError('1s'),
  InvalidJobOptionsError: () => new core.InvalidJobOptionsError('C', 'retries', 'is bad'),
  DuplicateJobNameError: () => new core.DuplicateJobNameError('n', 'A', 'B'),
  InvalidJobClassError: () => new core.InvalidJobClassError('C', 'has no run method'),
  JobNotRegisteredError: () => new core.JobNotRegisteredError('C'),
  InvalidArgumentError: () => new core.InvalidArgumentError('x', 'is bad'),
  InvalidPayloadError: () => new core.InvalidPayloadError('n', 'a.b', 'is bad'),
  InvalidIdempotencyKeyError: () => new core.InvalidIdempotencyKeyError('n', 'is empty'),
  InvalidFlowKeyError: () => new core.InvalidFlowKeyError('n', 'group.key', 'threw'),
  NotPlainDataError: () => new core.NotPlainDataError('The result', 'a', 'is a function'),
  TransactionsUnsupportedError: () => new core.TransactionsUnsupportedError('ctx.transaction'),
  JobNotFoundError: () => new core.JobNotFoundError('j1'),
  ScheduleNotFoundError: () => new core.ScheduleNotFoundError('nightly', []),
  LeaseLostError: () => new core.LeaseLostError('j1'),
  JobTimeoutError: () => new core.JobTimeoutError('j1', 1_000),
  CancelledError: () => new core.CancelledError('j1'),
  EngineStoppedError: () => new core.EngineStoppedError('j1'),
  JobFailedError: () => new core.JobFailedError('thrown', 'thrown'),
  JobTooLargeError: () => new core.JobTooLargeError('j1', 'too large'),
  PayloadTooLargeError: () => new core.PayloadTooLargeError('The payload of job "report"', 2048, 1024),
  OutcomeNotStoredError: () => new core.OutcomeNotStoredError('j1', 'complete', new Error('refused')),
  StoreTimeoutError: () => new core.StoreTimeoutError('claim', 1_000),
  EngineStateError: () => new core.EngineStateError('stopped'),
  DuplicateStepError: () => new core.DuplicateStepError('j1', 's'),
  NonDeterminismError: () => new core.NonDeterminismError('j1', 's', 'step', 'sleep'),
  StepOrderError: () => new core.StepOrderError('j1', 0, { name: 'a', kind: 'step' }, { name: 'b', kind: 'step' }),
  StepResultTooLargeError: () => new core.StepResultTooLargeError('s', 'too large'),
  WaitTimeoutError: () => new core.WaitTimeoutError('w', 'timed out'),
  ChildFailedError: () => new core.ChildFailedError('w', 'c1', 'dead'),
  ChildCancelledError: () => new core.ChildCancelledError('w', 'c1', 'cancelled'),
  TooManySignalsError: () => new core.TooManySignalsError('j1', 'go', 100),
  BatchNotFoundError: () => new core.BatchNotFoundError('b1'),
  InvalidBatchError: () => new core.InvalidBatchError('no jobs'),
  InvalidTransitionError: () => new core.InvalidTransitionError('j1', 'complete', 'queued', ['running']),
  NotCloneableError: () => new core.NotCloneableError('The result', 'a', 'is a function'),
  SandboxCrashedError: () => new core.SandboxCrashedError('j1', 'exited with code 1'),
  SandboxModuleError: () => new core.SandboxModuleError('file:///x.js', 'failed to load'),
  SandboxUnsupportedError: () => new core.SandboxUnsupportedError('ctx.transaction', 'no session'),
  TokenRejectedError: () => new core.TokenRejectedError('t1', 'no', 'w'),
  TokenTimeoutError: () => new core.TokenTimeoutError('t1', new Date(0), 'w'),
  TokenCancelledError: () => new core.TokenCancelledError('t1', 'its job ended'),
  InvalidTokenOutputError: () => new core.InvalidTokenOutputError('t1', 'a', 'is bad'),
  WaitTokenNotFoundError: () => new core.WaitTokenNotFoundError('t1'),
  RunRecordMismatchError: () => new core.RunRecordMismatchError('a run of "a"', 'a run of "b"'),
  InvalidDependenciesError: () => new core.InvalidDependenciesError('unknown job ids: j9'),
  DependencyFailedError: () => new core.DependencyFailedError('j1', 'j2', 'dead'),
};

/** Every class exported by @loom/core that extends LoomError (LoomError itself takes any code). */
const errorClasses = Object.entries(core).filter(
  (entry): entry is [string, typeof LoomError] => typeof entry[1] === 'function' && entry[1].prototype instanceof LoomError,
);

describe('the error classes of @loom/core', () => {
  it('are all built here, and each is a LoomError of its own class', () => {
    expect(errorClasses.length).toBeGreaterThan(25);
    expect(errorClasses.map(([name]) => name).filter((name) => !(name in samples))).toEqual([]);
    for (const [name, ErrorClass] of errorClasses) {
      const error = samples[name]!();
      expect(error).toBeInstanceOf(ErrorClass);
      expect(LoomError.is(error, error.code)).toBe(true);
      expect(error.name).toBe(name);
    }
  });

  it('have a distinct code each, unless one class refines another', () => {
    const byCode = new Map<string, (typeof LoomError)[]>();
    for (const [name, ErrorClass] of errorClasses) {
      const { code } = samples[name]!();
      byCode.set(code, [...(byCode.get(code) ?? []), ErrorClass]);
    }
    const shared = [...byCode]
      .filter(([, classes]) => classes.some((a) => classes.some((b) => a !== b && !(a.prototype instanceof b) && !(b.prototype instanceof a))))
      .map(([code, classes]) => `${code}: ${classes.map((c) => c.name).join(', ')}`);
    expect(shared).toEqual([]);
  });

  it('tells a store timeout from other store errors by code', () => {
    expect(samples.StoreTimeoutError!().code).toBe('STORE_TIMEOUT');
  });
});
