import type { Filter } from 'mongodb';
import type { JobDocument } from '../schema/documents.js';

/**
 * Partitions of queues (MongoStore option `partitions`). A queue split into N partitions stores
 * each job's partition (`partition`, 1..N-1; partition 0 leaves the field out, so a queue of one
 * partition stores exactly what it always did) and the jobs collection is sharded on
 * `{ queue: 1, partition: 1 }`: every command about one job, and every claim of one partition,
 * reaches the one shard owning that (queue, partition).
 */

/** Where a job lives: its queue and partition (0 for a queue of one partition). */
export interface Route {
  queue: string;
  partition: number;
}

/** 32-bit FNV-1a of a string: the same key lands in the same partition in every process. */
export function hashKey(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The partition of a job with `key` (its idempotency or debounce key) in a queue of `count` partitions. */
export function keyPartition(key: string, count: number): number {
  return count <= 1 ? 0 : hashKey(key) % count;
}

/** The shard key fields of a route, as a filter: `partition: null` matches partition 0, whose field is absent. */
export function routeFilter(route: Route): Filter<JobDocument> {
  return { queue: route.queue, partition: route.partition === 0 ? null : route.partition } as Filter<JobDocument>;
}

/** The route of a stored job document (or of its parent, from the fields a child keeps). */
export function routeOf(doc: { queue?: unknown; partition?: unknown }): Route | undefined {
  if (typeof doc.queue !== 'string') return undefined;
  return { queue: doc.queue, partition: typeof doc.partition === 'number' ? doc.partition : 0 };
}

/** A stable text form of a route, for maps. */
export function routeName(route: Route): string {
  return `${route.partition}\u0000${route.queue}`;
}

/** The partition counts of queues, and where new jobs go. */
export class Partitions {
  private readonly next = new Map<string, number>();

  constructor(private readonly counts: Readonly<Record<string, number>>) {}

  /** How many partitions `queue` has (1 unless configured). */
  count(queue: string): number {
    return this.counts[queue] ?? 1;
  }

  /** Whether any queue has more than one partition. */
  get any(): boolean {
    return Object.values(this.counts).some((n) => n > 1);
  }

  /**
   * The partition of a new job: from its idempotency key (else debounce key) when it has one, so
   * every enqueue of a key lands in the same partition and a unique index prefixed by the shard key
   * still keeps the key unique in its queue; else the queue's partitions in turn (an even spread).
   */
  pick(queue: string, key: string | undefined): number {
    const count = this.count(queue);
    if (count <= 1) return 0;
    if (key !== undefined) return keyPartition(key, count);
    const at = this.next.get(queue) ?? Math.floor(Math.random() * count);
    this.next.set(queue, (at + 1) % count);
    return at;
  }

  /**
   * Sets a new job's partition (left out for partition 0, as in a queue of one partition). A child
   * without a key goes by its parent's id: the children of a parent in one queue share one
   * partition, so the lookups of a parent's children (`findActiveChild`, the release of their
   * retention holds) reach one shard. The price: one parent's children in one queue are claimed
   * from one partition (give a large fan-out's children keys, or spread them over queues).
   */
  place(doc: { queue: string; partition?: number; idempotencyKey?: string; debounceKey?: string; parentId?: string }): void {
    const partition = this.pick(doc.queue, doc.idempotencyKey ?? doc.debounceKey ?? doc.parentId);
    if (partition !== 0) doc.partition = partition;
  }

  /** Every route of `queue`. */
  routes(queue: string): Route[] {
    return Array.from({ length: this.count(queue) }, (_, partition) => ({ queue, partition }));
  }
}
