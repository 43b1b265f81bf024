import { randomUUID } from 'node:crypto';
import type { Document, ObjectId } from 'mongodb';

/**
 * The lease tokens of one batch claim round: `<round id>:<job id in hex>`, a fresh random round id
 * per round. Each job still gets a token no other job or claim ever held (what fenced writes of many
 * jobs rely on, see `fencedManyFilter`), and the server can compute it from `_id`, so one update
 * can lease every candidate of the round ({@link claimRoundPipeline}) instead of one statement each.
 */
export class ClaimRound {
  readonly #prefix = `${randomUUID()}:`;

  /** The token job `id` is leased under in this round. */
  tokenFor(id: ObjectId): string {
    return this.#prefix + id.toHexString();
  }

  /** The same token as an aggregation expression over the job being updated. */
  tokenExpression(): Document {
    return { $concat: [{ $literal: this.#prefix }, { $toString: '$_id' }] };
  }
}
