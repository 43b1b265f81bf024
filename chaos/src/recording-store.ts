import { LoomError, type JobRecord, type JobStore, type LeaseRef } from '@loom/core';
import type { Ledger } from './ledger.js';

/**
 * Wraps a store so that every claim, every accepted lease extension (each item of a `heartbeatMany`) and every completion attempt (each item of a `completeMany`) is written to the ledger, and
 * keeps the leases this process holds (for a best-effort release on a hard stop). Everything else
 * passes through untouched.
 *
 * A completion inside a transaction (`ctx.transaction`) counts only if the transaction commits:
 * its `complete` is noted against the session, and the ack goes to the ledger when
 * `withTransaction` returns (accepted) or throws (refused, with the error's code). A callback the
 * driver runs again after a transient error completes again in the new attempt: still one ack.
 */
export function recordingStore(store: JobStore, ledger: Ledger, owner: string): { store: JobStore; held: Map<string, LeaseRef> } {
  const held = new Map<string, LeaseRef>();
  const finishing = new Set<keyof JobStore>(['retry', 'deadLetter', 'release', 'sleep', 'wait']);
  /** The lease each open transaction's session completed, with when its first attempt started. */
  const completedIn = new WeakMap<object, { lease: LeaseRef; start: number }>();
  const codeOf = (err: unknown): string => (LoomError.is(err) ? err.code : (err as Error).name);
  const ack = (lease: LeaseRef, start: number, outcome: { ok: true } | { ok: false; err: unknown }): void => {
    if (outcome.ok) held.delete(lease.jobId);
    const code = outcome.ok ? {} : { code: codeOf(outcome.err) };
    ledger.append({ t: 'ack', job: lease.jobId, token: lease.token, owner, start, at: Date.now(), ok: outcome.ok, ...code });
  };
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (prop === 'claim') {
        return async (...args: Parameters<JobStore['claim']>) => {
          const jobs: JobRecord[] = await target.claim(...args);
          for (const job of jobs) {
            held.set(job.id, { jobId: job.id, token: job.lease!.token });
            ledger.append({ t: 'claim', job: job.id, token: job.lease!.token, attempt: job.attempt, owner, at: Date.now(), until: job.lease!.until.getTime() });
          }
          return jobs;
        };
      }
      if (prop === 'extendLease') {
        // An extension is noted once the store accepted it (the lease then runs to `until`).
        return async (...args: Parameters<JobStore['extendLease']>) => {
          const extension = await target.extendLease(...args);
          const [lease, until] = args;
          ledger.append({ t: 'beat', job: lease.jobId, token: lease.token, owner, at: Date.now(), until: until.getTime() });
          return extension;
        };
      }
      if (prop === 'heartbeatMany') {
        // The engine's batched heartbeats: each item the store extended is noted as one extension.
        return async (...args: Parameters<JobStore['heartbeatMany']>) => {
          const outcomes = await target.heartbeatMany(...args);
          const at = Date.now();
          args[0].forEach(({ lease, until }, i) => {
            const outcome = outcomes[i];
            if (outcome === 'extended' || outcome === 'cancel-requested')
              ledger.append({ t: 'beat', job: lease.jobId, token: lease.token, owner, at, until: until.getTime() });
          });
          return outcomes;
        };
      }
      if (prop === 'complete') {
        return async (...args: Parameters<JobStore['complete']>) => {
          const [lease, outcome] = args;
          const start = Date.now();
          const session = outcome.session;
          if (typeof session === 'object' && session !== null) {
            // Inside a transaction: the ack is decided by the commit (see withTransaction below).
            completedIn.set(session, { lease, start: completedIn.get(session)?.start ?? start });
            return target.complete(...args);
          }
          try {
            await target.complete(...args);
          } catch (err) {
            ack(lease, start, { ok: false, err });
            throw err;
          }
          ack(lease, start, { ok: true });
        };
      }
      if (prop === 'completeMany') {
        // The engine's group commit: one ack per item, by that item's own outcome.
        return async (...args: Parameters<JobStore['completeMany']>) => {
          const [items] = args;
          const start = Date.now();
          let outcomes: Awaited<ReturnType<JobStore['completeMany']>>;
          try {
            outcomes = await target.completeMany(...args);
          } catch (err) {
            for (const { lease } of items) ack(lease, start, { ok: false, err });
            throw err;
          }
          items.forEach(({ lease }, i) => {
            const outcome = outcomes[i];
            if (outcome === 'completed') ack(lease, start, { ok: true });
            else if (outcome === 'lost') ack(lease, start, { ok: false, err: new LoomError('LEASE_LOST', 'lease lost') });
            else if (outcome === 'cancelled') ack(lease, start, { ok: false, err: new LoomError('CANCELLED', 'cancel requested') });
            else ack(lease, start, { ok: false, err: outcome?.error });
          });
          return outcomes;
        };
      }
      if (prop === 'withTransaction') {
        return async <T>(fn: (session: unknown) => Promise<T>): Promise<T> => {
          let session: object | undefined;
          const settle = (outcome: { ok: true } | { ok: false; err: unknown }): void => {
            const completed = session && completedIn.get(session);
            if (completed) ack(completed.lease, completed.start, outcome);
          };
          try {
            const result = await target.withTransaction!((s) => {
              session = s as object;
              return fn(s);
            });
            settle({ ok: true });
            return result;
          } catch (err) {
            settle({ ok: false, err });
            throw err;
          }
        };
      }
      if (finishing.has(prop as keyof JobStore)) {
        return async (lease: LeaseRef, ...rest: unknown[]) => {
          const result: unknown = await (value as (...a: unknown[]) => Promise<unknown>).call(target, lease, ...rest);
          held.delete(lease.jobId);
          return result;
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { store: wrapped, held };
}
