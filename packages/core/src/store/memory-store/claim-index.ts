import { BinaryHeap } from './binary-heap.js';
import { claimableFrom, type StoredJob } from './stored-job.js';

/** A job's place in the index, frozen at the version it was indexed for. */
interface IndexEntry {
  job: StoredJob;
  version: number;
  priority: number;
  runAt: number;
  seq: number;
  /** When it becomes claimable (ms). */
  at: number;
}

/** Claim order: priority descending, then `runAt`, then enqueue order. */
function claimsFirst(a: IndexEntry, b: IndexEntry): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.runAt !== b.runAt) return a.runAt < b.runAt;
  return a.seq < b.seq;
}

const isStale = (entry: IndexEntry): boolean => entry.version !== entry.job.version;

/** A lane is compacted once it holds more than twice its live entries plus this slack. */
const COMPACTION_SLACK = 64;

/**
 * The jobs of one queue and one name: `ready` holds those already claimable in claim order,
 * `timers` those that become claimable later (delays, backoff, sleeps, wait timeouts, leases),
 * earliest first.
 */
class Lane {
  readonly ready = new BinaryHeap<IndexEntry>(claimsFirst);
  readonly timers = new BinaryHeap<IndexEntry>((a, b) => a.at < b.at);
  /** Jobs with an entry for their current version in this lane. */
  live = 0;

  /** Moves every timer due at `now` into `ready`, dropping stale entries on the way. */
  drain(now: number): void {
    for (let next = this.timers.peek(); next && next.at <= now; next = this.timers.peek()) {
      this.timers.pop();
      if (!isStale(next)) this.ready.push(next);
    }
  }

  /** The best ready entry, after dropping stale ones from the top. */
  head(): IndexEntry | undefined {
    for (let next = this.ready.peek(); next; next = this.ready.peek()) {
      if (!isStale(next)) return next;
      this.ready.pop();
    }
    return undefined;
  }

  /**
   * Drops stale entries once they outnumber the live ones. Without it, every job that finished
   * within one lease length would stay referenced by its lease timer until that timer came due.
   */
  compactIfBloated(): void {
    if (this.ready.size + this.timers.size <= 2 * this.live + COMPACTION_SLACK) return;
    const live = (entry: IndexEntry): boolean => !isStale(entry);
    this.ready.retain(live);
    this.timers.retain(live);
  }
}

/**
 * The MemoryStore's claim index. Only active jobs are in it, split by queue and name, so a claim
 * touches the lanes it asks for and never the finished jobs. Entries are never searched for and
 * removed: a job that changes gets a new entry (and a new version), and the old entry is dropped
 * when it surfaces or when its lane is compacted. A claim costs O(lanes + log n) per job returned.
 */
export class ClaimIndex {
  readonly #lanes = new Map<string, Map<string, Lane>>();

  /**
   * Indexes a job in its current state. Call after every change that bumped its version, also
   * when it left the claimable states (completed, dead, waiting without a timeout).
   */
  update(job: StoredJob, now: number): void {
    const { record } = job;
    const lane = this.#lane(record.queue, record.name);
    const at = claimableFrom(job);
    if (at === undefined) {
      if (job.indexed) lane.live -= 1;
      job.indexed = false;
      lane.compactIfBloated();
      return;
    }
    if (!job.indexed) lane.live += 1;
    job.indexed = true;
    const entry: IndexEntry = { job, version: job.version, priority: record.priority, runAt: record.runAt.getTime(), seq: job.seq, at };
    if (at <= now) lane.ready.push(entry);
    else lane.timers.push(entry);
    lane.compactIfBloated();
  }

  /**
   * Removes and returns up to `limit` jobs claimable at `now` from the given queues and names, in
   * claim order. The caller must change each returned job (bumping its version) and update it.
   */
  take(req: { queues: string[]; names: string[]; excludeNames?: string[]; limit: number; now: number }): StoredJob[] {
    const lanes = this.#lanesFor(req.queues, req.names, req.excludeNames ?? []);
    for (const lane of lanes) lane.drain(req.now);
    const taken: StoredJob[] = [];
    while (taken.length < req.limit) {
      let bestLane: Lane | undefined;
      let best: IndexEntry | undefined;
      for (const lane of lanes) {
        const head = lane.head();
        if (head && (!best || claimsFirst(head, best))) {
          bestLane = lane;
          best = head;
        }
      }
      if (!bestLane || !best) break;
      bestLane.ready.pop();
      const at = claimableFrom(best.job);
      if (at !== undefined && at > req.now) {
        // The caller's clock went backwards since this entry became ready: not claimable yet.
        bestLane.timers.push({ ...best, at });
        continue;
      }
      bestLane.live -= 1;
      best.job.indexed = false;
      if (at !== undefined) taken.push(best.job);
    }
    return taken;
  }

  /** How many entries (live and stale) the index holds: what compaction keeps bounded. */
  get size(): number {
    let size = 0;
    for (const byName of this.#lanes.values()) for (const lane of byName.values()) size += lane.ready.size + lane.timers.size;
    return size;
  }

  #lanesFor(queues: string[], names: string[], exclude: string[]): Lane[] {
    const lanes: Lane[] = [];
    for (const queue of queues) {
      const byName = this.#lanes.get(queue);
      if (!byName) continue;
      for (const name of names) {
        const lane = exclude.includes(name) ? undefined : byName.get(name);
        // A queue or name listed twice must not make its lane count twice.
        if (lane && !lanes.includes(lane)) lanes.push(lane);
      }
    }
    return lanes;
  }

  #lane(queue: string, name: string): Lane {
    let byName = this.#lanes.get(queue);
    if (!byName) this.#lanes.set(queue, (byName = new Map()));
    let lane = byName.get(name);
    if (!lane) byName.set(name, (lane = new Lane()));
    return lane;
  }
}
