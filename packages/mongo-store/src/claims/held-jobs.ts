import { MongoServerError, type Collection, type ObjectId } from 'mongodb';
import type { AbandonedTransactions } from '../connection/abandoned-transactions.js';
import { readCandidates, type ClaimGroup } from './claims.js';
import type { JobDocument } from '../schema/documents.js';
import type { StoreLogger } from '../options.js';

/** mongod's WriteConflict: a write inside a transaction to a document another open transaction wrote fails with it at once. */
const WRITE_CONFLICT = 112;

/**
 * Claimable jobs whose document an open transaction holds, set aside from this store's claims.
 *
 * A worker that froze or died inside `ctx.transaction` after writing its job leaves the document
 * locked until the server aborts the transaction (60 s on mongod). Every claim write that reaches
 * it waits there until `claimTimeout`; the claim sorts that job first and one claim command serves
 * every queue of the engine, so without this every queue would stall for the whole minute.
 *
 * Which job is held cannot be read (reads see the last committed version and never wait), so it is
 * probed: a write to the document inside a transaction of our own fails at once with a
 * WriteConflict while another transaction holds it, and is aborted either way, so it never changes
 * anything. After a claim ran out of time, its next candidates are probed and the held ones set
 * aside; claims leave them out (`_id: { $nin }`) and probe them again at each claim, returning them
 * to claims once no transaction holds them. On a standalone (no transactions, so no transaction can
 * hold a job) probing fails and nothing is set aside: claims behave as before.
 */
export class JobsHeldByTransactions {
  readonly #held = new Map<string, ObjectId>();

  constructor(
    private readonly transactions: AbandonedTransactions,
    private readonly jobs: Collection<JobDocument>,
    private readonly logger: StoreLogger,
  ) {}

  /** The ids claims leave out now. */
  get ids(): ObjectId[] {
    return [...this.#held.values()];
  }

  /** Probes every job set aside; those no transaction holds any longer go back to claims. */
  async recheck(): Promise<void> {
    if (this.#held.size === 0) return;
    await Promise.all(
      [...this.#held].map(async ([key, id]) => {
        if (!(await this.#probe(id))) this.#held.delete(key);
      }),
    );
  }

  /**
   * After a claim of `groups` ran out of time: probes its next `wanted` candidates (the ones its
   * writes reached first) and sets aside those an open transaction holds. Returns their ids; none
   * when the claim was only slow, or when probing is not possible here.
   */
  async setAsideHeld(groups: ClaimGroup[], wanted: number): Promise<ObjectId[]> {
    try {
      const candidates = await readCandidates(this.jobs, groups, wanted);
      const held = (await Promise.all(candidates.map(async ({ _id }) => ((await this.#probe(_id)) ? [_id] : [])))).flat();
      for (const id of held) this.#held.set(id.toHexString(), id);
      return held;
    } catch (err) {
      this.logger.warn({ err }, 'could not find which job a transaction holds (probing needs transactions): claims go on as before');
      return [];
    }
  }

  /** Whether an open transaction holds job `id`'s document. */
  async #probe(id: ObjectId): Promise<boolean> {
    // Any real change takes the document's write lock; the transaction is always aborted, so it
    // never lands (and is ended on the server if a lost connection kept the abort from it).
    return this.transactions.aborted(async (session) => {
      try {
        await this.jobs.updateOne({ _id: id }, { $set: { lockProbe: true } } as never, { session });
        return false;
      } catch (err) {
        if (err instanceof MongoServerError && err.code === WRITE_CONFLICT) return true;
        throw err;
      }
    });
  }
}
