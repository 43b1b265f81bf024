import { z } from 'zod';
import type { Clock } from '../support/clock.js';
import { InvalidArgumentError, InvalidTokenOutputError, WaitTokenNotFoundError } from '../support/errors.js';
import { findPlainDataProblem } from '../support/plain-data.js';
import type { JobStore } from '../store/store.js';
import type { WaitTokenRecord, WaitTokenSettlement, WaitTokenStatus } from '../store/wait-token.js';
import { MAX_STEP_RESULT_BYTES } from '../workflow/step-limits.js';
import { plainString } from './plain-string.js';

/** What `tokens.complete` / `tokens.reject` did. */
export interface TokenResult {
  /** True when this call settled the token; false when it was settled before (or had timed out): nothing changed. */
  completed: boolean;
  /** The token's status after the call. */
  status: WaitTokenStatus;
  /** For a `cancelled` token: why (its job ended, or was removed), so nothing resumes. */
  reason?: string;
}

/** Where the engine hooks into `tokens`. */
export interface TokensHooks {
  /** A token was settled: its job may be queued again, local workers may claim it. */
  onSettled?(): void;
}

/** Longest rejection reason kept (longer ones are cut). */
const MAX_REASON = 1_000;

/**
 * `loom.tokens`: settle the wait tokens runs wait for (`ctx.createWaitToken`, `ctx.waitForToken`).
 * Store operations only, so they work from any process sharing the store (the `loom` command line
 * and the dashboard's token endpoint build one over a bare store).
 *
 * ```ts
 * await loom.tokens.complete(tokenId, { approved: true, by: 'ana' }); // { completed: true, status: 'completed' }
 * await loom.tokens.complete(tokenId, { approved: true, by: 'ana' }); // { completed: false, status: 'completed' }
 * ```
 */
export class Tokens {
  constructor(private readonly deps: { store: JobStore; clock: Clock; hooks?: TokensHooks }) {}

  /** The stored token (status, timeout, output), or null when no token has this id. */
  get(id: string): Promise<WaitTokenRecord | null> {
    return this.deps.store.getWaitToken(plainString(id, 'tokens.get id'));
  }

  /** The wait tokens of a job, oldest first (every status): what the dashboard shows on a job's page. */
  list(jobId: string): Promise<WaitTokenRecord[]> {
    return this.deps.store.listWaitTokens(plainString(jobId, 'tokens.list jobId'));
  }

  /**
   * Completes a pending token with `output`: its run resumes, and `ctx.waitForToken` returns the
   * output. The output must be plain data matching the token's schema, else
   * `InvalidTokenOutputError` (`INVALID_TOKEN_OUTPUT`) and nothing changes. A token settled before
   * (or past its timeout) is unchanged: `{ completed: false }`. A pending token whose job has ended
   * (cancelled, dead, completed) resumes nothing: it ends `cancelled`, `{ completed: false, status:
   * 'cancelled', reason }`. Unknown id: `WAIT_TOKEN_NOT_FOUND`.
   */
  async complete(id: string, output?: unknown): Promise<TokenResult> {
    const token = await this.find(id, 'complete');
    if (token.status === 'pending') checkOutput(token, output);
    return this.settle(token, output === undefined ? { status: 'completed' } : { status: 'completed', output });
  }

  /**
   * Rejects a pending token: its run resumes and `ctx.waitForToken` throws `TokenRejectedError`
   * with `reason`. A token settled before (or past its timeout) is unchanged: `{ completed: false }`.
   */
  async reject(id: string, reason?: string): Promise<TokenResult> {
    if (reason !== undefined && typeof reason !== 'string') throw new InvalidArgumentError('tokens.reject reason', 'must be a string; nothing changed');
    const token = await this.find(id, 'reject');
    return this.settle(token, reason === undefined ? { status: 'rejected' } : { status: 'rejected', reason: reason.slice(0, MAX_REASON) });
  }

  private async find(id: string, method: string): Promise<WaitTokenRecord> {
    const token = await this.deps.store.getWaitToken(plainString(id, `tokens.${method} id`));
    if (!token) throw new WaitTokenNotFoundError(id);
    return token;
  }

  private async settle(token: WaitTokenRecord, settlement: WaitTokenSettlement): Promise<TokenResult> {
    const { store, clock, hooks } = this.deps;
    const now = clock.now();
    let outcome = await store.settleWaitToken(token.id, { settlement, now });
    if (!outcome) throw new WaitTokenNotFoundError(token.id);
    if (!outcome.settled && outcome.token.status === 'pending') {
      // Past its timeout: settle it timed out, so its run resumes now rather than at its next look.
      outcome = (await store.settleWaitToken(token.id, { settlement: { status: 'timed-out' }, now })) ?? outcome;
      hooks?.onSettled?.();
      return { completed: false, status: outcome.token.status };
    }
    if (outcome.token.status === 'cancelled')
      return { completed: false, status: 'cancelled', ...(outcome.token.reason ? { reason: outcome.token.reason } : {}) };
    hooks?.onSettled?.();
    return { completed: outcome.settled, status: outcome.token.status };
  }
}

/** Checks a completion's output: plain data, under the step size limit, matching the token's schema. */
function checkOutput(token: WaitTokenRecord, output: unknown): void {
  const problem = findPlainDataProblem(output, MAX_STEP_RESULT_BYTES);
  if (problem) throw new InvalidTokenOutputError(token.id, problem.path, `${problem.reason} (outputs must be plain data of at most MAX_STEP_RESULT_BYTES)`);
  if (token.schema === undefined) return;
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(token.schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (err) {
    throw new InvalidTokenOutputError(token.id, '', `cannot be checked: the token's stored schema is unreadable (${(err as Error).message})`);
  }
  const result = schema.safeParse(output);
  if (result.success) return;
  const [first] = result.error.issues;
  const path = (first?.path ?? []).map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.');
  throw new InvalidTokenOutputError(token.id, path.replace(/\.\[/g, '['), `${first?.message ?? 'does not match the schema'} (the token's schema)`);
}
