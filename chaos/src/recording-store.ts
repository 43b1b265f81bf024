import { LoomError, type JobRecord, type JobStore, type LeaseRef } from '@loom/core';
import type { Ledger } from './ledger.js';

/**
 * Wraps a store so that every claim and every completion attempt is written to the ledger, and
 * keeps the leases this process holds (for a best-effort release on a hard stop). Everything else
 * passes through untouched.
 */
export function recordingStore(store: JobStore, ledger: Ledger, owner: string): { store: JobStore; held: Map<string, LeaseRef> } {
  const held = new Map<string, LeaseRef>();
  const finishing = new Set<keyof JobStore>(['retry', 'deadLetter', 'release', 'sleep', 'wait']);
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (prop === 'claim') {
        return async (...args: Parameters<JobStore['claim']>) => {
          const jobs: JobRecord[] = await target.claim(...args);
          for (const job of jobs) {
            held.set(job.id, { jobId: job.id, token: job.lease!.token });
            ledger.append({ t: 'claim', job: job.id, token: job.lease!.token, attempt: job.attempt, owner, at: Date.now() });
          }
          return jobs;
        };
      }
      if (prop === 'complete') {
        return async (...args: Parameters<JobStore['complete']>) => {
          const [lease] = args;
          const start = Date.now();
          try {
            await target.complete(...args);
          } catch (err) {
            const code = LoomError.is(err) ? err.code : (err as Error).name;
            ledger.append({ t: 'ack', job: lease.jobId, token: lease.token, owner, start, at: Date.now(), ok: false, code });
            throw err;
          }
          held.delete(lease.jobId);
          ledger.append({ t: 'ack', job: lease.jobId, token: lease.token, owner, start, at: Date.now(), ok: true });
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
