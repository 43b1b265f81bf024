import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { toMs } from '../support/duration.js';
import { InvalidArgumentError, TokenCancelledError, TokenRejectedError, TokenTimeoutError } from '../support/errors.js';
import { findPlainDataProblem } from '../support/plain-data.js';
import type { StepRecord } from '../store/job-record.js';
import { waitTokenSignal, waitTokenSignalData, type WaitTokenRecord, type WaitTokenSignalData } from '../store/wait-token.js';
import type { RunScope } from './run-scope.js';
import { RunSuspension } from './run-suspension.js';
import { waitTokenUrl } from '../support/token-links.js';
import type { CreateWaitTokenOptions, WaitForTokenOptions, WaitToken } from '../jobs/workflow-options.js';

/** A new token id: 128 random bits, so knowing it is the right to settle the token. */
function newTokenId(): string {
  return `wt_${randomBytes(16).toString('base64url')}`;
}

/**
 * `ctx.createWaitToken`: stores a pending token of this run's job and returns it. Call it inside a
 * `ctx.step`, so a retried attempt gets the same token back instead of making another.
 */
export async function createWaitToken(run: RunScope, options: CreateWaitTokenOptions = {}): Promise<WaitToken> {
  const what = 'ctx.createWaitToken';
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError(`${what} options`, 'must be an object');
  const now = run.clock.now();
  let timeoutAt: Date | undefined;
  if (options.timeout !== undefined) {
    try {
      timeoutAt = new Date(now.getTime() + toMs(options.timeout));
    } catch (err) {
      throw new InvalidArgumentError(`${what} timeout`, (err as Error).message);
    }
  }
  const id = newTokenId();
  const record: WaitTokenRecord = { id, jobId: run.jobId, status: 'pending', createdAt: now };
  if (timeoutAt) record.timeoutAt = timeoutAt;
  const { schema } = options;
  if (schema !== undefined) {
    if (typeof (schema as { safeParse?: unknown })?.safeParse !== 'function') throw new InvalidArgumentError(`${what} schema`, 'must be a zod schema');
    try {
      record.schema = z.toJSONSchema(schema);
    } catch (err) {
      throw new InvalidArgumentError(
        `${what} schema`,
        `cannot be stored as JSON Schema (${(err as Error).message}); use a schema without transforms or refinements`,
      );
    }
  }
  if ('default' in options) {
    const value: unknown = options.default;
    const problem = findPlainDataProblem(value);
    if (problem) throw new InvalidArgumentError(`${what} default`, `${problem.path ? `at ${problem.path} ` : ''}${problem.reason} (it must be plain data)`);
    if (schema !== undefined && !schema.safeParse(value).success) throw new InvalidArgumentError(`${what} default`, 'does not match the schema');
    record.timeoutDefault = value === undefined ? { value: null } : { value };
  }
  await run.moveOn();
  await run.store.createWaitToken(run.lease, record, now);
  const token: WaitToken = { id };
  const links = run.services.waitTokenLinks;
  if (links) token.url = waitTokenUrl(id, links);
  if (timeoutAt) token.timeoutAt = timeoutAt.toISOString();
  return token;
}

function tokenIdOf(token: unknown): string {
  const id = typeof token === 'string' ? token : (token as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || id === '') throw new InvalidArgumentError('ctx.waitForToken token', 'must be a token from ctx.createWaitToken (or its id)');
  return id;
}

/**
 * `ctx.waitForToken`: the output the token was completed with. Takes the token's settlement off
 * the job and records it as a `signal` step in one store operation; without one, the run parks
 * (no worker held) until the token is settled or times out. A rejection throws
 * `TokenRejectedError`, a timeout `TokenTimeoutError` (or returns the token's default). The
 * outcome is final: every later attempt gets the same one.
 */
export async function waitForToken(run: RunScope, token: WaitToken | string, opts: WaitForTokenOptions = {}): Promise<unknown> {
  const id = tokenIdOf(token);
  if (typeof opts !== 'object' || opts === null) throw new InvalidArgumentError('ctx.waitForToken options', 'must be an object');
  const timeoutHint = typeof token === 'object' && token.timeoutAt !== undefined ? new Date(token.timeoutAt) : undefined;
  const signal = waitTokenSignal(id);
  const name = opts.step ?? run.steps.nextName('waitForToken');
  const recorded = run.reach(name, 'signal');
  const outcome = (step: StepRecord): unknown => tokenOutcome(id, name, step, timeoutHint);
  if (recorded?.status === 'completed') return outcome(recorded);
  await run.moveOn();
  const now = run.clock.now();
  const { store } = run;
  const consumed = await store.consumeSignal(run.lease, { signal, stepName: name, now });
  if (consumed) return outcome(consumed);
  const stored = await store.getWaitToken(id);
  if (!stored || stored.jobId !== run.jobId) {
    throw new InvalidArgumentError(
      `ctx.waitForToken("${id}")`,
      `is not a wait token of job ${run.jobId}: a run can only wait for tokens it created (and a settled token goes with its job's retention)`,
    );
  }
  // Ended with its job (which was then retried): it resumes nothing, so waiting for it would hang.
  if (stored.status === 'cancelled') throw new TokenCancelledError(id, stored.reason);
  let settled = stored.status === 'pending' ? undefined : stored;
  if (!settled && stored.timeoutAt && stored.timeoutAt.getTime() <= now.getTime()) {
    settled = (await store.settleWaitToken(id, { settlement: { status: 'timed-out' }, now }))?.token;
  }
  if (settled && settled.status !== 'pending') {
    // Delivered as a signal by the settlement; if that delivery never happened, record it from the token.
    const taken = await store.consumeSignal(run.lease, { signal, stepName: name, now });
    if (taken) return outcome(taken);
    return outcome(await run.record({ name, kind: 'signal', status: 'completed', result: waitTokenSignalData(settled), signalId: signal, at: now }));
  }
  const { timeoutAt } = stored;
  const pending: StepRecord | undefined = recorded ? undefined : { name, kind: 'signal', status: 'pending', at: now };
  if (pending && timeoutAt) pending.wakeAt = timeoutAt;
  return run.suspend(
    new RunSuspension(
      `${name} for wait token ${id}`,
      async (lease, when) => {
        const waited = await store.wait(lease, {
          for: { signal },
          now: when,
          ...(timeoutAt ? { timeoutAt } : {}),
          ...(pending ? { step: run.steps.stamp(pending) } : {}),
        });
        // Settled after consumeSignal looked: hand the job back at once, the next run takes it.
        if (waited === 'signal-pending') await store.release(lease, when);
      },
      timeoutAt,
    ),
  );
}

/** What a recorded token step means for the wait: the output, or the rejection or time-out thrown. */
function tokenOutcome(id: string, stepName: string, step: StepRecord, timeoutHint: Date | undefined): unknown {
  const data = (step.result ?? {}) as WaitTokenSignalData;
  switch (data.status) {
    case 'completed':
      return data.output;
    case 'rejected':
      throw new TokenRejectedError(id, data.reason, stepName);
    case 'timed-out':
      if (data.hasDefault) return data.output ?? null;
      throw new TokenTimeoutError(id, timeoutHint ?? step.wakeAt ?? step.at, stepName);
    default:
      throw new InvalidArgumentError(`step "${stepName}"`, `does not hold the outcome of wait token ${id}`);
  }
}
