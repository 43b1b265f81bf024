/**
 * The most signals one job may hold before runs take them: 100. Signals wait on the job document
 * until a `ctx.waitForSignal` takes them, so a sender that outpaces the job (or a job that never
 * waits for that name) would otherwise grow it without bound.
 */
export const MAX_PENDING_SIGNALS = 100;
