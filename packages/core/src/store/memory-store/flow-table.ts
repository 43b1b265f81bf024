import { compareFlowUsage, MAX_FLOW_USAGE, type FlowHeldBy, type FlowHold, type FlowHoldRecord, type FlowLimits, type FlowUsage } from '../flow.js';
import type { JobRecord } from '../job-record.js';
import type { StoredJob } from './stored-job.js';

/** A rate-limit log: the start times (ms) still inside the window, oldest first. */
type StartLog = number[];

/** Holds of one name: the whole name, and single rate-limit keys. */
interface NameHolds {
  until?: number;
  keys: Map<string, number>;
}

/** The key a job's rate limit counts under: its `rateLimitKey` for a keyed limit ('' when it has none). */
const rateKeyOf = (limits: FlowLimits, job: StoredJob): string | undefined => (limits.rateLimit?.keyed ? (job.record.rateLimitKey ?? '') : undefined);

/**
 * The MemoryStore's flow-control state. Concurrency is counted from the running jobs themselves
 * (those whose lease has not expired), so a job that finishes, or whose lease expires, frees its
 * slot with no bookkeeping of its own; rate limits keep the start times inside their window.
 */
export class FlowTable {
  /** Running jobs by name, and by name and group key. */
  readonly #running = new Map<string, Set<StoredJob>>();
  readonly #runningByGroup = new Map<string, Map<string, Set<StoredJob>>>();
  /** Start logs by name ('' entry: the whole name) and rate-limit key. */
  readonly #starts = new Map<string, Map<string, StartLog>>();
  /** The latest `now` each start log was judged at by a claim. */
  readonly #latest = new WeakMap<StartLog, number>();
  readonly #holds = new Map<string, NameHolds>();
  /** The limits of each name as the last claim gave them: what `heldBy` judges by. */
  readonly #known = new Map<string, FlowLimits>();

  /** A job became `running` (claimed). */
  started(job: StoredJob): void {
    const { name, groupKey } = job.record;
    setIn(this.#running, name).add(job);
    if (groupKey !== undefined) setIn(mapIn(this.#runningByGroup, name), groupKey).add(job);
  }

  /** A job left `running`. */
  stopped(job: StoredJob): void {
    const { name, groupKey } = job.record;
    this.#running.get(name)?.delete(job);
    if (groupKey !== undefined) this.#runningByGroup.get(name)?.get(groupKey)?.delete(job);
  }

  hold(req: FlowHoldRecord): void {
    let holds = this.#holds.get(req.name);
    if (!holds) this.#holds.set(req.name, (holds = { keys: new Map() }));
    const until = req.until.getTime();
    if (req.key === undefined) holds.until = Math.max(holds.until ?? -Infinity, until);
    else holds.keys.set(req.key, Math.max(holds.keys.get(req.key) ?? -Infinity, until));
  }

  holdsAt(now: number): FlowHoldRecord[] {
    const out: FlowHoldRecord[] = [];
    for (const [name, holds] of this.#holds) {
      if (holds.until !== undefined && holds.until > now) out.push({ name, until: new Date(holds.until) });
      for (const [key, until] of holds.keys) if (until > now) out.push({ name, key, until: new Date(until) });
    }
    return out;
  }

  /** The known limits and their use at `now` (see `JobStore.flowUsage`). */
  usage(now: number): FlowUsage[] {
    const out: FlowUsage[] = [];
    const held = (name: string, key: string | undefined) => {
      const until = this.heldUntil(name, key, now);
      return until === undefined ? {} : { heldUntil: new Date(until) };
    };
    const names = new Set([...this.#known.keys(), ...this.#holds.keys()]);
    for (const name of names) {
      const limits = this.#known.get(name);
      if (limits?.globalConcurrency !== undefined) {
        out.push({ name, kind: 'globalConcurrency', limit: limits.globalConcurrency, used: this.running(name, undefined, now).count });
      }
      const rate = limits?.rateLimit;
      if (rate && !rate.keyed) {
        out.push({
          name,
          kind: 'rateLimit',
          limit: rate.limit,
          perMs: rate.perMs,
          used: this.starts(name, '', rate.perMs, now).length,
          ...held(name, undefined),
        });
      } else if (this.heldUntil(name, undefined, now) !== undefined) {
        out.push({ name, kind: 'rateLimit', used: 0, ...held(name, undefined) });
      }
      if (limits?.group) {
        for (const key of this.#runningByGroup.get(name)?.keys() ?? []) {
          const used = this.running(name, key, now).count;
          if (used > 0) out.push({ name, key, kind: 'group', limit: limits.group.concurrency, used });
        }
      }
      const keys = new Set([...(rate?.keyed ? [...(this.#starts.get(name)?.keys() ?? [])] : []), ...(this.#holds.get(name)?.keys.keys() ?? [])]);
      for (const key of keys) {
        const used = rate?.keyed ? this.starts(name, key, rate.perMs, now).length : 0;
        const hold = held(name, key);
        if (used === 0 && hold.heldUntil === undefined) continue;
        out.push({ name, key, kind: 'rateLimit', ...(rate?.keyed ? { limit: rate.limit, perMs: rate.perMs } : {}), used, ...hold });
      }
    }
    return out.sort(compareFlowUsage).slice(0, MAX_FLOW_USAGE);
  }

  /** The admission rules of one claim. */
  gate(flow: FlowLimits[], now: number, leaseUntil: number): ClaimGate {
    for (const limits of flow) this.#known.set(limits.name, limits);
    return new ClaimGate(this, flow, now, leaseUntil);
  }

  /** Which flow limit holds back a due job at `now`, as far as the last claims told the limits. */
  heldBy(record: JobRecord, now: number): FlowHeldBy | undefined {
    const { name, rateLimitKey, groupKey } = record;
    const limits = this.#known.get(name);
    const rate = limits?.rateLimit;
    const rateKey = rate?.keyed ? (rateLimitKey ?? '') : undefined;
    if (this.heldUntil(name, undefined, now) !== undefined || (rateLimitKey !== undefined && this.heldUntil(name, rateLimitKey, now) !== undefined))
      return 'rateLimit';
    if (!limits) return undefined;
    if (rate && this.starts(name, rateKey ?? '', rate.perMs, now).length >= rate.limit) return 'rateLimit';
    if (limits.globalConcurrency !== undefined && this.running(name, undefined, now).count >= limits.globalConcurrency) return 'globalConcurrency';
    if (limits.group && groupKey !== undefined && this.running(name, groupKey, now).count >= limits.group.concurrency) return 'group';
    return undefined;
  }

  /** Running jobs of `name` (or of its group `key`) whose lease has not expired at `now`, and the earliest lease end among them. */
  running(name: string, key: string | undefined, now: number): { count: number; firstEnd?: number } {
    const jobs = key === undefined ? this.#running.get(name) : this.#runningByGroup.get(name)?.get(key);
    let count = 0;
    let firstEnd: number | undefined;
    for (const job of jobs ?? []) {
      const until = job.record.lease?.until.getTime();
      if (until === undefined || until < now) continue;
      count += 1;
      firstEnd = Math.min(firstEnd ?? Infinity, until + 1);
    }
    return { count, firstEnd };
  }

  /** The starts of a rate log still inside `perMs` at `now` (older ones are dropped). */
  starts(name: string, key: string, perMs: number, now: number): StartLog {
    const byKey = mapIn(this.#starts, name);
    let log = byKey.get(key);
    if (!log) byKey.set(key, (log = []));
    let expired = 0;
    while (expired < log.length && log[expired]! <= now - perMs) expired += 1;
    if (expired > 0) log.splice(0, expired);
    return log;
  }

  /**
   * Starts are granted in time order: a claim whose `now` is behind the latest one a log was judged
   * at gets the instant to come back at (a later claim dropped starts this one would still count).
   * Otherwise `now` becomes the log's latest.
   */
  behind(log: StartLog, now: number): number | undefined {
    const latest = this.#latest.get(log) ?? now;
    if (latest > now) return latest;
    this.#latest.set(log, now);
    return undefined;
  }

  heldUntil(name: string, key: string | undefined, now: number): number | undefined {
    const holds = this.#holds.get(name);
    const until = key === undefined ? holds?.until : holds?.keys.get(key);
    return until !== undefined && until > now ? until : undefined;
  }
}

/**
 * The admission rules of one claim: whether a name, and a job's key, may start one more job now.
 * Jobs taken during the claim count at once (they are not `running` until the claim ends).
 */
export class ClaimGate {
  readonly holds: FlowHold[] = [];
  readonly #limits = new Map<string, FlowLimits>();
  /** Jobs taken in this claim, by name and by name + group key. */
  readonly #taken = new Map<string, number>();
  readonly #takenByGroup = new Map<string, Map<string, number>>();

  constructor(
    private readonly table: FlowTable,
    flow: FlowLimits[],
    private readonly now: number,
    /** The lease end of the jobs this claim takes. */
    private readonly leaseUntil: number,
  ) {
    for (const limits of flow) this.#limits.set(limits.name, limits);
  }

  /** Whether `name` is gated at all in this claim. */
  gates(name: string): boolean {
    return this.#limits.has(name);
  }

  /** Null when `name` may start one more job; else what holds it (recorded for the claim's report). */
  nameHold(name: string): FlowHold | null {
    const limits = this.#limits.get(name);
    if (!limits) return null;
    const { now, table } = this;
    const held = table.heldUntil(name, undefined, now);
    if (held !== undefined) return this.#report({ name, by: 'rateLimit', until: new Date(held) });
    const rate = limits.rateLimit;
    if (rate && !rate.keyed) {
      const log = table.starts(name, '', rate.perMs, now);
      const later = table.behind(log, now);
      if (log.length >= rate.limit) return this.#report({ name, by: 'rateLimit', until: new Date(Math.max(log[0]! + rate.perMs, later ?? 0)) });
      if (later !== undefined) return this.#report({ name, by: 'rateLimit', until: new Date(later) });
    }
    if (limits.globalConcurrency !== undefined) {
      const running = table.running(name, undefined, now);
      const taken = this.#taken.get(name) ?? 0;
      if (running.count + taken >= limits.globalConcurrency)
        return this.#report(withUntil({ name, by: 'globalConcurrency' }, this.#firstEnd(running.firstEnd, taken)));
    }
    return null;
  }

  /** Null when `job`'s group key and rate-limit key may start one more job; else what holds it. */
  keyHold(job: StoredJob): FlowHold | null {
    const { name, groupKey } = job.record;
    const limits = this.#limits.get(name);
    if (!limits) return null;
    const { now, table } = this;
    const rateKey = rateKeyOf(limits, job);
    if (rateKey !== undefined) {
      const held = table.heldUntil(name, rateKey, now);
      if (held !== undefined) return this.#report({ name, key: rateKey, by: 'rateLimit', until: new Date(held) });
      const log = table.starts(name, rateKey, limits.rateLimit!.perMs, now);
      const later = table.behind(log, now);
      if (log.length >= limits.rateLimit!.limit)
        return this.#report({ name, key: rateKey, by: 'rateLimit', until: new Date(Math.max(log[0]! + limits.rateLimit!.perMs, later ?? 0)) });
      if (later !== undefined) return this.#report({ name, key: rateKey, by: 'rateLimit', until: new Date(later) });
    }
    if (limits.group && groupKey !== undefined) {
      const running = table.running(name, groupKey, now);
      const taken = this.#takenByGroup.get(name)?.get(groupKey) ?? 0;
      if (running.count + taken >= limits.group.concurrency)
        return this.#report(withUntil({ name, key: groupKey, by: 'group' }, this.#firstEnd(running.firstEnd, taken)));
    }
    return null;
  }

  /** `job` is taken: it counts against its name's and key's limits from now on. */
  take(job: StoredJob): void {
    const { name, groupKey } = job.record;
    const limits = this.#limits.get(name);
    if (!limits) return;
    const { now, table } = this;
    this.#taken.set(name, (this.#taken.get(name) ?? 0) + 1);
    if (groupKey !== undefined) {
      const byGroup = mapIn(this.#takenByGroup, name);
      byGroup.set(groupKey, (byGroup.get(groupKey) ?? 0) + 1);
    }
    const rate = limits.rateLimit;
    if (rate) table.starts(name, rate.keyed ? (job.record.rateLimitKey ?? '') : '', rate.perMs, now).push(now);
  }

  /** The earliest lease end among running jobs and those `taken` in this claim (whose lease ends at `leaseUntil`). */
  #firstEnd(running: number | undefined, taken: number): number | undefined {
    const ofTaken = taken > 0 ? this.leaseUntil + 1 : undefined;
    if (running === undefined) return ofTaken;
    return ofTaken === undefined ? running : Math.min(running, ofTaken);
  }

  #report(hold: FlowHold): FlowHold {
    this.holds.push(hold);
    return hold;
  }
}

function withUntil(hold: FlowHold, until: number | undefined): FlowHold {
  return until === undefined ? hold : { ...hold, until: new Date(until) };
}

function mapIn<K, V>(map: Map<string, Map<K, V>>, key: string): Map<K, V> {
  let inner = map.get(key);
  if (!inner) map.set(key, (inner = new Map<K, V>()));
  return inner;
}

function setIn<V>(map: Map<string, Set<V>>, key: string): Set<V> {
  let inner = map.get(key);
  if (!inner) map.set(key, (inner = new Set()));
  return inner;
}
