import type { JobStore } from '@loom/core';

/** The order id a shop job belongs to: the last `:` segment of its idempotency key (`receipt:<id>`, `relay:receipt:<id>`, ...). */
function orderIdOfKey(key: string | undefined): string | undefined {
  return key?.slice(key.lastIndexOf(':') + 1);
}

/** How many jobs of these orders are still queued, running or waiting (sleeping). */
export async function activeJobsOf(store: JobStore, orderIds: ReadonlySet<string>): Promise<number> {
  const active = await store.listJobs({ status: ['queued', 'running', 'waiting'] });
  return active.filter((job) => orderIds.has(orderIdOfKey(job.idempotencyKey) ?? '')).length;
}

/**
 * Resolves once no job of these orders is active (each completed or dead-lettered); rejects after
 * `timeoutMs`. Polls the store, calling `onPoll` each time (the live line redraws there).
 */
export async function waitUntilSettled(
  store: JobStore,
  orderIds: readonly string[],
  options: { timeoutMs: number; intervalMs: number; onPoll?: (active: number) => void },
): Promise<void> {
  const ids = new Set(orderIds);
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const active = await activeJobsOf(store, ids);
    options.onPoll?.(active);
    if (active === 0) return;
    if (Date.now() > deadline) throw new Error(`${active} job(s) of the demo orders were still active after ${options.timeoutMs} ms; see GET /stats`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs));
  }
}
