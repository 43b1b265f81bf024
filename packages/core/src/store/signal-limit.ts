import { LoomError } from '../support/errors.js';

/**
 * The most signals one job may hold before runs take them: 100. Signals wait on the job document
 * until a `ctx.waitForSignal` takes them, so a sender that outpaces the job (or a job that never
 * waits for that name) would otherwise grow it without bound.
 */
export const MAX_PENDING_SIGNALS = 100;

/** A signal was refused because the job already holds {@link MAX_PENDING_SIGNALS}; nothing was stored. */
export class TooManySignalsError extends LoomError {
  constructor(readonly jobId: string, readonly signalName: string) {
    super(
      'TOO_MANY_SIGNALS',
      `Job ${jobId}: signal "${signalName}" was refused and nothing was stored: the job already holds ${MAX_PENDING_SIGNALS} signals ` +
        '(MAX_PENDING_SIGNALS) that no run has taken yet. Let the job consume them with ctx.waitForSignal before sending more, ' +
        'or send one signal carrying a batch',
    );
  }
}
