/**
 * Wait tokens as stored: a run creates one (`ctx.createWaitToken`), a person or another system
 * settles it (`loom.tokens.complete` / `reject`), or the run itself does when it times out.
 * A token is settled once: the first settlement wins and every later one changes nothing.
 */

/**
 * Where a wait token is in its life: `pending` until settled, then one of the others for good.
 * `cancelled`: its job ended (completed, dead, cancelled) or was removed while the token was
 * pending; nobody waits for it any more, so completing it resumes nothing (see
 * {@link JobStore.endWaitTokens}).
 */
export type WaitTokenStatus = 'pending' | 'completed' | 'rejected' | 'timed-out' | 'cancelled';

/** The settled statuses of a wait token. */
export const SETTLED_TOKEN_STATUSES: readonly WaitTokenStatus[] = ['completed', 'rejected', 'timed-out', 'cancelled'];

/** The reason a token of a job that ended is `cancelled` with (its `reason`). */
export function endedJobReason(jobId: string, jobStatus: string | null): string {
  return jobStatus === null ? `its job ${jobId} was removed` : `its job ${jobId} is ${jobStatus} and no longer waits for it`;
}

/** A wait token as stored. */
export interface WaitTokenRecord {
  /** Unguessable (128 random bits): knowing it is the right to settle the token. */
  id: string;
  /** The job whose run created it; only that job's run can wait for it. */
  jobId: string;
  status: WaitTokenStatus;
  createdAt: Date;
  /** After this instant the token can no longer be completed or rejected; the run settles it `timed-out`. */
  timeoutAt?: Date;
  /** The JSON Schema (draft 2020-12, made from the run's zod schema) a completion's output must match. */
  schema?: unknown;
  /** What the wait returns when the token times out; absent: the wait throws `TokenTimeoutError`. */
  timeoutDefault?: { value: unknown };
  /** When it was settled. */
  settledAt?: Date;
  /** A completed token's output (or a timed-out token's default). */
  output?: unknown;
  /** A rejected token's reason; for a `cancelled` one, why (its job ended). */
  reason?: string;
}

/** How {@link JobStore.settleWaitToken} settles a token. */
export type WaitTokenSettlement =
  | { status: 'completed'; output?: unknown }
  | { status: 'rejected'; reason?: string }
  /** Only once `timeoutAt` has passed; the wait then gets the token's default, if it has one. */
  | { status: 'timed-out' };

/** What {@link JobStore.settleWaitToken} found. */
export interface WaitTokenSettleOutcome {
  /** True when this call settled the token; false when it was settled before (or timed out). Nothing changed then. */
  settled: boolean;
  /** The token after the call. */
  token: WaitTokenRecord;
}

/** The name (and id) of the signal that tells a token's job how the token was settled. */
export function waitTokenSignal(tokenId: string): string {
  return `waitToken:${tokenId}`;
}

/** The data of a token's signal: how it was settled, as the waiting run reads it. */
export interface WaitTokenSignalData {
  status: 'completed' | 'rejected' | 'timed-out';
  output?: unknown;
  reason?: string;
  /** A timed-out token with a default (`output` is the default). */
  hasDefault?: boolean;
}

/** The signal data a settled token delivers to its job. */
export function waitTokenSignalData(token: WaitTokenRecord): WaitTokenSignalData {
  if (token.status === 'pending' || token.status === 'cancelled') throw new Error(`wait token ${token.id} is ${token.status}: it delivers nothing`);
  const data: WaitTokenSignalData = { status: token.status };
  if (token.status === 'rejected') {
    if (token.reason !== undefined) data.reason = token.reason;
  } else if (token.status === 'timed-out') {
    if (token.timeoutDefault) {
      data.hasDefault = true;
      if (token.timeoutDefault.value !== undefined) data.output = token.timeoutDefault.value;
    }
  } else if (token.output !== undefined) {
    data.output = token.output;
  }
  return data;
}
