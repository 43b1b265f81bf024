/** A job this process just stored, as the worker pool hears of it. */
export interface EnqueuedJob {
  id: string;
  queue: string;
  runAt: Date;
}

/** What a claim started from, so its answer only clears what was known before it was sent. */
export interface ClaimTicket {
  readonly unknownSeq: number;
  readonly announced: number;
}

/** Ids kept for matching a store's announcement with this process's own enqueue (either may come first). */
const MAX_TRACKED_IDS = 10_000;

/**
 * A set that forgets its oldest ids past a bound, in O(1): two generations, the older dropped
 * whole when the newer fills. (Deleting a Map's first key one at a time instead cost 10% of an
 * enqueueMany's CPU: V8 walks the deleted slots at the front on every `keys().next()`.)
 */
class RecentIds {
  private current = new Set<string>();
  private previous = new Set<string>();

  add(id: string): void {
    if (this.current.size >= MAX_TRACKED_IDS / 2) {
      this.previous = this.current;
      this.current = new Set();
    }
    this.current.add(id);
  }

  /** Removes `id`; whether it was there. */
  take(id: string): boolean {
    return this.current.delete(id) || this.previous.delete(id);
  }
}

/**
 * When a claim can find anything, so the worker pool sends none that must come back empty (on
 * MongoDB each is a command; one job at a time costs insert, claim and complete, nothing else).
 *
 * Two kinds of knowledge:
 * - **unknown**: the store may hold claimable jobs nobody announced (the pool started, a poll
 *   fired, jobs were requeued by some operation, a queue resumed, or the last claim came back full).
 *   A claim then asks for as many as there is room for; one that comes back short saw every
 *   claimable job, so the pool stops claiming until something new is heard.
 * - **announced**: jobs heard of one by one (enqueued by this process, or announced by the store's
 *   `subscribe`). A claim then asks for just that many: on MongoDB a claim of one is a single
 *   `findAndModify`, where a larger one first reads its candidates.
 *
 * A store announces this process's own enqueues too (a change stream echoes every insert). Both
 * signals carry the job id, so the second of the two is recognised and dropped: the echo of one's
 * own enqueue never causes a claim. Either may come first (a MemoryStore announces in a microtask,
 * before its `enqueue` has resolved).
 */
export class ClaimDemand {
  private unknown = true;
  private unknownSeq = 0;
  private announced = 0;
  /** Own enqueues whose announcement by the store has not come yet. */
  private readonly awaitingEcho = new RecentIds();
  /** Announcements counted before this process's enqueue of that job returned. */
  private readonly heardFirst = new RecentIds();
  /**
   * Names the last short claim left out or a flow limit held back in it (their concurrency was used
   * up): a run of one ending may free a job of that name. (Rate-limit windows wake the pool themselves.)
   */
  private blockedNames = new Set<string>();
  /**
   * Batch handlers' names whose last claim came back full: more of their jobs may be due. Their
   * claims are apart from the others (one name each), so their answers say nothing of the rest,
   * nor the rest's of them.
   */
  private readonly batchBacklog = new Set<string>();

  /** Anything may be claimable (start, poll, a wake of unknown cause). */
  anything(): void {
    this.unknown = true;
    this.unknownSeq++;
  }

  /**
   * Jobs this process stored. Returns whether any is due now (worth a claim). `track` is false when
   * the store announces nothing (no `subscribe`): there is no echo to wait for.
   */
  enqueued(jobs: readonly EnqueuedJob[], now: number, track: boolean): boolean {
    let due = 0;
    for (const job of jobs) {
      if (track && this.heardFirst.take(job.id)) continue; // already counted from the store's announcement
      if (track) this.awaitingEcho.add(job.id);
      if (job.runAt.getTime() <= now) due++;
    }
    this.announced += due;
    return due > 0;
  }

  /**
   * The store announced a job (`subscribe`). Returns whether it is worth a claim: due now, and not
   * the echo of this process's own enqueue. Jobs due later are found by the poll.
   */
  heard(event: { id?: string; runAt: Date }, now: number): boolean {
    if (event.id !== undefined) {
      if (this.awaitingEcho.take(event.id)) return false;
      this.heardFirst.add(event.id);
    }
    if (event.runAt.getTime() > now) return false;
    this.announced++;
    return true;
  }

  /** How many to claim with `room` free slots: 0 when no claim could find anything. */
  limit(room: number): number {
    if (this.unknown) return room;
    return Math.min(room, this.announced);
  }

  /** Taken just before a claim is sent. */
  ticket(): ClaimTicket {
    return { unknownSeq: this.unknownSeq, announced: this.announced };
  }

  /**
   * A claim of `limit` (sent with `ticket`, leaving out `excludeNames`) returned `got` jobs.
   * Returns whether another claim may find more.
   */
  claimed(ticket: ClaimTicket, limit: number, got: number, excludeNames: readonly string[]): boolean {
    if (got >= limit) {
      this.announced = Math.max(0, this.announced - got);
      return this.unknown || this.announced > 0;
    }
    // Short: every job claimable when the claim ran was seen. What was heard meanwhile stays.
    this.announced = Math.max(0, this.announced - ticket.announced);
    if (this.unknownSeq === ticket.unknownSeq) this.unknown = false;
    this.blockedNames = new Set(excludeNames);
    return false;
  }

  /** A claim failed: nothing was learnt, so anything may still be claimable (the retry claims fully). */
  failed(): void {
    this.unknown = true;
  }

  /** A claim of batch handler `name`'s jobs asked for `limit` and got `got`. */
  batchClaimed(name: string, limit: number, got: number): void {
    if (got >= limit) this.batchBacklog.add(name);
    else this.batchBacklog.delete(name);
  }

  /** A run of `name` ended: whether its slot is worth a claim. */
  runEnded(name: string): boolean {
    // A batch handler's call ending frees a unit of concurrency its waiting jobs can take.
    if (this.batchBacklog.has(name)) return true;
    // The last short claim left this name out: a job of it may be waiting for exactly this slot.
    if (this.blockedNames.delete(name)) this.anything();
    return this.unknown || this.announced > 0;
  }
}
