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
/** One function for every compaction: a closure made per call is a new call target each time, and optimised code deoptimises on it. */
const isLive = (entry: IndexEntry): boolean => !isStale(entry);

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
    this.ready.retain(isLive);
    this.timers.retain(isLive);
  }
}

/** The key a job is indexed under within its name: its group key, else its rate-limit key, else ''. */
export const laneKeyOf = (job: StoredJob): string => job.record.groupKey ?? job.record.rateLimitKey ?? '';

/**
 * The lanes of one queue and name: one per key ('' for jobs without keys). Keys take turns: the
 * lane served last moves to the back, so the map's order is the order of the next turns.
 */
class NameLanes {
  readonly lanes = new Map<string, Lane>();

  constructor(readonly name: string) {}

  /** `key` was just served: its next turn comes after every other key's. */
  served(key: string): void {
    const lane = this.lanes.get(key);
    if (!lane || this.lanes.size < 2) return;
    this.lanes.delete(key);
    this.lanes.set(key, lane);
  }

  /** Forgets the lane of a key with no job left in it (keys come and go: tenants, documents). */
  dropIfEmpty(key: string, lane: Lane): void {
    if (key !== '' && lane.live === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
  }
}

/**
 * Who decides whether a due job may start now (flow limits). Without one, every due job may.
 * A refusal is final for the rest of the claim: the whole name (`nameHold`), or the job's lane (`keyHold`).
 */
export interface ClaimGate {
  gates(name: string): boolean;
  nameHold(name: string): unknown;
  keyHold(job: StoredJob): unknown;
  take(job: StoredJob): void;
}

/**
 * The MemoryStore's claim index. Only active jobs are in it, split by queue and name (and by key,
 * for jobs with a group or rate-limit key), so a claim touches the lanes it asks for and never the
 * finished jobs. Entries are never searched for and removed: a job that changes gets a new entry
 * (and a new version), and the old entry is dropped when it surfaces or when its lane is
 * compacted. A claim costs O(lanes + log n) per job returned.
 */
export class ClaimIndex {
  readonly #lanes = new Map<string, Map<string, NameLanes>>();

  /**
   * Indexes a job in its current state. Call after every change that bumped its version, also
   * when it left the claimable states (completed, dead, waiting without a timeout).
   */
  update(job: StoredJob, now: number): void {
    const { record } = job;
    const laneKey = laneKeyOf(job);
    if (job.indexed && job.laneKey !== laneKey) {
      // Its key changed (a debounced enqueue replaced its payload): it leaves its old lane.
      this.#leave(job);
    }
    const at = claimableFrom(job);
    if (at === undefined) {
      if (job.indexed) this.#leave(job);
      return;
    }
    const lane = this.#lane(record.queue, record.name, laneKey);
    if (!job.indexed) lane.live += 1;
    job.indexed = true;
    job.laneKey = laneKey;
    const entry: IndexEntry = { job, version: job.version, priority: record.priority, runAt: record.runAt.getTime(), seq: job.seq, at };
    if (at <= now) lane.ready.push(entry);
    else lane.timers.push(entry);
    lane.compactIfBloated();
  }

  /**
   * Removes and returns up to `limit` jobs claimable at `now` from the given queues and names, in
   * claim order; the lanes of one name take turns by key. With a `gate`, a job is taken only if the
   * gate admits its name and key. The caller must change each returned job (bumping its version)
   * and update it.
   */
  take(req: { queues: string[]; names: string[]; excludeNames?: string[]; limit: number; now: number; gate?: ClaimGate }): StoredJob[] {
    const { gate } = req;
    const groups = this.#groupsFor(req.queues, req.names, req.excludeNames ?? []);
    for (const group of groups) for (const lane of group.lanes.values()) lane.drain(req.now);
    const heldNames = new Set<string>();
    const heldLanes = new Set<Lane>();
    const taken: StoredJob[] = [];
    while (taken.length < req.limit) {
      let bestGroup: NameLanes | undefined;
      let bestLane: Lane | undefined;
      let best: IndexEntry | undefined;
      for (const group of groups) {
        if (heldNames.has(group.name)) continue;
        const found = this.#headInTurn(group, heldLanes, gate);
        if (!found) continue;
        if (gate?.gates(group.name) && gate.nameHold(group.name) !== null) {
          heldNames.add(group.name);
          continue;
        }
        if (!best || claimsFirst(found.head, best)) {
          bestGroup = group;
          bestLane = found.lane;
          best = found.head;
        }
      }
      if (!bestGroup || !bestLane || !best) break;
      bestLane.ready.pop();
      const at = claimableFrom(best.job);
      if (at !== undefined && at > req.now) {
        // The caller's clock went backwards since this entry became ready: not claimable yet.
        bestLane.timers.push({ ...best, at });
        continue;
      }
      const key = best.job.laneKey ?? '';
      this.#leave(best.job);
      if (at === undefined) continue;
      bestGroup.served(key);
      gate?.take(best.job);
      taken.push(best.job);
    }
    return taken;
  }

  /** How many entries (live and stale) the index holds: what compaction keeps bounded. */
  get size(): number {
    let size = 0;
    for (const byName of this.#lanes.values())
      for (const group of byName.values()) for (const lane of group.lanes.values()) size += lane.ready.size + lane.timers.size;
    return size;
  }

  /** The head of the lane whose turn it is in `group` (skipping empty lanes and those the gate holds). */
  #headInTurn(group: NameLanes, heldLanes: Set<Lane>, gate: ClaimGate | undefined): { lane: Lane; head: IndexEntry } | undefined {
    const gated = gate?.gates(group.name) === true;
    for (const lane of group.lanes.values()) {
      if (heldLanes.has(lane)) continue;
      const head = lane.head();
      if (!head) continue;
      if (gated && gate!.keyHold(head.job) !== null) {
        heldLanes.add(lane);
        continue;
      }
      return { lane, head };
    }
    return undefined;
  }

  #groupsFor(queues: string[], names: string[], exclude: string[]): NameLanes[] {
    const groups: NameLanes[] = [];
    for (const queue of queues) {
      const byName = this.#lanes.get(queue);
      if (!byName) continue;
      for (const name of names) {
        const group = exclude.includes(name) ? undefined : byName.get(name);
        // A queue or name listed twice must not make its lanes count twice.
        if (group && !groups.includes(group)) groups.push(group);
      }
    }
    return groups;
  }

  /** Takes an indexed job out of the count of its lane (its entries go stale with its version). */
  #leave(job: StoredJob): void {
    const key = job.laneKey ?? '';
    const group = this.#lanes.get(job.record.queue)?.get(job.record.name);
    const lane = group?.lanes.get(key);
    job.indexed = false;
    if (!group || !lane) return;
    lane.live -= 1;
    lane.compactIfBloated();
    group.dropIfEmpty(key, lane);
  }

  #lane(queue: string, name: string, key: string): Lane {
    let byName = this.#lanes.get(queue);
    if (!byName) this.#lanes.set(queue, (byName = new Map<string, NameLanes>()));
    let group = byName.get(name);
    if (!group) byName.set(name, (group = new NameLanes(name)));
    let lane = group.lanes.get(key);
    if (!lane) group.lanes.set(key, (lane = new Lane()));
    return lane;
  }
}
