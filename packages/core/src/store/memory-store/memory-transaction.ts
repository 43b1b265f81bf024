import { LoomError } from '../../support/errors.js';

/**
 * A store write buffered until its transaction commits. `check` throws when the write can no
 * longer apply (so the commit fails and nothing applies); `apply` makes it and must not throw.
 */
export interface BufferedWrite {
  check(): void;
  apply(): void;
}

/**
 * The session a MemoryStore hands to `withTransaction`'s callback. Store operations given it are
 * buffered and applied together, synchronously, when the callback resolves, or dropped when it
 * throws. It covers only MemoryStore writes: there is no user data in a MemoryStore to include.
 */
export class MemoryTransaction {
  #state: 'open' | 'committed' | 'aborted' = 'open';
  readonly #writes: BufferedWrite[] = [];
  /** Idempotency keys taken by this transaction's enqueues (key → job id), for dedup inside it. */
  readonly keys = new Map<string, string>();
  /** Ids of the jobs this transaction's enqueues will store: later enqueues in it may depend on them. */
  readonly enqueued = new Set<string>();

  constructor(readonly owner: object) {}

  /** The transaction `session` stands for, if `owner` made it; otherwise `INVALID_ARGUMENT`. */
  static of(session: unknown, owner: object): MemoryTransaction {
    if (session instanceof MemoryTransaction && session.owner === owner) return session;
    throw new LoomError(
      'INVALID_ARGUMENT',
      "The session was not created by this MemoryStore: pass the session that this store's withTransaction gave your callback",
    );
  }

  buffer(write: BufferedWrite): void {
    this.#assertOpen();
    this.#writes.push(write);
  }

  /** Checks every buffered write, then applies them all; on a failed check nothing applies. */
  commit(): void {
    this.#assertOpen();
    try {
      for (const write of this.#writes) write.check();
    } catch (error) {
      this.#state = 'aborted';
      throw error;
    }
    this.#state = 'committed';
    for (const write of this.#writes) write.apply();
  }

  abort(): void {
    if (this.#state === 'open') this.#state = 'aborted';
  }

  #assertOpen(): void {
    if (this.#state !== 'open') {
      throw new LoomError(
        'INVALID_ARGUMENT',
        `This MemoryStore transaction session has already ${this.#state === 'committed' ? 'committed' : 'aborted'}; ` +
          'use a session only inside the withTransaction callback that received it',
      );
    }
  }
}
