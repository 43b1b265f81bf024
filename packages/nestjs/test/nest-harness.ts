import type { EnqueueArgs, JobClass, Loom } from '@loom/core';

// The hand-settled promise core's tests use: how a handler "hangs" until the test lets it go.
export { deferred, type Deferred } from '../../core/test/deferred.js';

/**
 * Enqueues a job and resolves once the engine reports it completed or dead (the engine claims it
 * at once: enqueueing wakes the workers). Listens before enqueueing, so a fast run is not missed.
 */
export async function enqueueAndWait<C extends JobClass>(loom: Loom, job: C, ...args: EnqueueArgs<C>): Promise<{ id: string; status: 'completed' | 'dead' }> {
  const finished = new Map<string, 'completed' | 'dead'>();
  let waiting: { id: string; resolve: (status: 'completed' | 'dead') => void } | undefined;
  const note = (id: string, status: 'completed' | 'dead'): void => {
    finished.set(id, status);
    if (waiting?.id === id) waiting.resolve(status);
  };
  const unsubscribe = [loom.on('job:completed', (e) => note(e.job.id, 'completed')), loom.on('job:dead', (e) => note(e.job.id, 'dead'))];
  try {
    const { id } = await loom.enqueue(job, ...args);
    const status = finished.get(id) ?? (await new Promise<'completed' | 'dead'>((resolve) => (waiting = { id, resolve })));
    return { id, status };
  } finally {
    for (const off of unsubscribe) off();
  }
}
