import type { Collection } from 'mongodb';
import type { ClaimRequest, FlowHold, JobRecord } from '@loom/core';
import { claimFilter } from '../schema/filters.js';
import { CLAIM_INDEX_KEY } from '../schema/indexes.js';
import type { JobDocument } from '../schema/documents.js';
import { routeName, routeOf, type Partitions, type Route } from './partitions.js';

/** Claimable jobs the probe reads at most (from the claim index) to learn which partitions have some. */
const PROBE_LIMIT = 1000;

/**
 * The partitions of `req`'s queues holding jobs claimable at `req.now`: one aggregate on the claim
 * index. It reaches every shard (the one command of a claim that does), and reads nothing when
 * no job is claimable: the cost of an idle poll, whatever the number of partitions.
 */
export async function claimablePartitions(jobs: Collection<JobDocument>, req: ClaimRequest, maxTimeMS: number): Promise<Route[]> {
  const found = await jobs
    .aggregate<{ _id: { queue: string; partition?: number } }>(
      [{ $match: claimFilter(req) }, { $limit: PROBE_LIMIT }, { $group: { _id: { queue: '$queue', partition: '$partition' } } }],
      { hint: CLAIM_INDEX_KEY, maxTimeMS },
    )
    .toArray();
  return found.flatMap(({ _id }) => routeOf(_id) ?? []);
}

/**
 * Claims on partitioned queues: one claim per partition (each reaches one shard), partition by
 * partition from a start that moves on each claim, so no partition is always served first.
 *
 * No busy polling of empty partitions: a partition a claim found short of jobs is *quiet* until
 * this store hears of work there — a job enqueued (by this process, or announced by the change
 * stream), a job this store put back with a `runAt` (retry, sleep, wait timeout), the expiry of a
 * lease it handed out, a wake-up or a signal. A claim visits the partitions that may have work,
 * then asks one probe which quiet partitions have claimable jobs nobody announced (another
 * process's retry, a lease that expired elsewhere). An idle engine thus sends one command per
 * poll whatever the number of partitions: the probe, which reads every shard's claim index.
 */
/** The holds several partitions reported, each once (the earliest opening of a name or key held in several). */
function oncePerHold(holds: FlowHold[]): FlowHold[] {
  const byWhat = new Map<string, FlowHold>();
  for (const hold of holds) {
    const what = JSON.stringify([hold.name, hold.key ?? null, hold.by]);
    const seen = byWhat.get(what);
    if (!seen || (hold.until !== undefined && (seen.until === undefined || hold.until < seen.until))) byWhat.set(what, hold);
  }
  return [...byWhat.values()];
}

/** Instants kept per partition; past this many the partition is simply claimed again. */
const MAX_UPCOMING = 256;

export class PartitionClaims {
  /** Per partition, the earliest instant it may have claimable work: absent = maybe now. */
  private readonly quietUntil = new Map<string, number>();
  /** Per partition, the instants jobs heard of become claimable (a claim that finds it empty keeps the later ones). */
  private readonly upcoming = new Map<string, number[]>();
  private turn = 0;

  constructor(private readonly partitions: Partitions) {}

  /** Something may be claimable in `route` from `at` (ms). */
  heard(route: Route, at: number): void {
    const name = routeName(route);
    const quiet = this.quietUntil.get(name);
    if (quiet !== undefined && at < quiet) this.quietUntil.set(name, at);
    const upcoming = this.upcoming.get(name) ?? [];
    if (upcoming.length >= MAX_UPCOMING) {
      this.quietUntil.delete(name);
      this.upcoming.delete(name);
      return;
    }
    upcoming.push(at);
    this.upcoming.set(name, upcoming);
  }

  /** Anything may be claimable anywhere (an operator's change of unknown jobs). */
  anything(): void {
    this.quietUntil.clear();
  }

  /**
   * Claims for `req`, one partition at a time, with `claimIn` (a claim narrowed to one partition):
   * first the partitions that may have work, from a start that moves on each claim; then, if the
   * claim still has room, the partitions `probe` finds claimable jobs in (one query over every
   * partition, answered from the claim index: nothing when idle). So a claim that comes back short
   * saw every claimable job, as the store contract says, and costs one command more than the
   * partitions with work, however many partitions there are.
   */
  async claim(
    req: ClaimRequest,
    claimIn: (route: Route, req: ClaimRequest) => Promise<JobRecord[]>,
    probe: (req: ClaimRequest) => Promise<Route[]>,
  ): Promise<JobRecord[]> {
    const routes = [...new Set(req.queues)].flatMap((queue) => this.partitions.routes(queue));
    if (routes.length === 0) return [];
    const start = this.turn++ % routes.length;
    const order = [...routes.slice(start), ...routes.slice(0, start)];
    const now = req.now.getTime();
    const claimed: JobRecord[] = [];
    const holds: FlowHold[] = [];
    const visited = new Set<string>();
    // Names a flow limit holds as a whole (not one key): held in every partition, so left out of the next ones.
    const heldNames = new Set<string>();
    const visit = async (route: Route): Promise<void> => {
      const wanted = req.limit - claimed.length;
      const name = routeName(route);
      if (wanted <= 0 || visited.has(name)) return;
      if (heldNames.size > 0 && req.names.every((n) => heldNames.has(n) || req.excludeNames?.includes(n))) return;
      visited.add(name);
      let held = false;
      const onHeld = (some: typeof holds): void => {
        held = true;
        holds.push(...some);
        for (const hold of some) if (hold.key === undefined) heldNames.add(hold.name);
      };
      const jobs = await claimIn(route, {
        ...req,
        queues: [route.queue],
        limit: wanted,
        ...(heldNames.size > 0 ? { excludeNames: [...(req.excludeNames ?? []), ...heldNames] } : {}),
        onHeld,
      });
      claimed.push(...jobs);
      // Short, with nothing held back by a flow limit: the partition has no job claimable before its next known one.
      if (jobs.length < wanted && !held) this.quiet(name, now);
      for (const job of jobs) if (job.lease) this.heard(route, job.lease.until.getTime() + 1);
    };
    for (const route of order) if ((this.quietUntil.get(routeName(route)) ?? -Infinity) <= now) await visit(route);
    if (claimed.length < req.limit) {
      const found = new Set((await probe(req)).map(routeName));
      for (const route of order) if (found.has(routeName(route))) await visit(route);
    }
    if (holds.length > 0) req.onHeld?.(oncePerHold(holds));
    return claimed;
  }

  private quiet(name: string, now: number): void {
    const later = (this.upcoming.get(name) ?? []).filter((at) => at > now);
    this.upcoming.set(name, later);
    this.quietUntil.set(name, later.length === 0 ? Infinity : Math.min(...later));
  }
}
