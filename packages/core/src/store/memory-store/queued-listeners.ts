/** What a `subscribe` listener hears: job `id` of `queue` became queued, claimable from `runAt`. */
export interface QueuedEvent {
  id: string;
  queue: string;
  runAt: Date;
}

/**
 * The `subscribe` listeners of a MemoryStore. Listeners run in a microtask, never inside a store
 * operation: a listener that calls back into the store (as a worker pool does) must not see an
 * operation half done. A listener that throws is reported to `onError`, the others still run.
 */
export class QueuedListeners {
  readonly #listeners = new Set<(event: QueuedEvent) => void>();

  constructor(private readonly onError: (error: unknown) => void) {}

  add(listener: (event: QueuedEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  notify(id: string, queue: string, runAt: Date): void {
    if (this.#listeners.size === 0) return;
    const at = runAt.getTime();
    for (const listener of this.#listeners) {
      queueMicrotask(() => {
        try {
          listener({ id, queue, runAt: new Date(at) });
        } catch (error) {
          this.onError(error);
        }
      });
    }
  }
}
