import { randomUUID } from 'node:crypto';
import type { Collection, Filter, ObjectId } from 'mongodb';
import { reportFlowHolds, type ClaimRequest, type FlowHold, type FlowLimits, type JobRecord, type JobStatus } from '@loom/core';
import { requireStrings } from '../arguments.js';
import { claimBest, claimGroups, readCandidates, sortForClaim, takeCandidates, type FlowClaims, type SetAside } from './claims.js';
import { ClaimRound } from './claim-round.js';
import type { FlowId, JobDocument } from '../schema/documents.js';
import { claimableNames } from '../schema/filters.js';
import { flowId, type FlowPermits, type Grant, type PermitRules } from '../flow/flow-permits.js';
import { FLOW_KEY_INDEX } from '../schema/indexes.js';
import type { StoreLogger } from '../options.js';
import { toJobRecord } from '../schema/records.js';
import { groupBy } from '../group-by.js';

/** A safety bound only, as in `claims.ts`. */
const MAX_ROUNDS = 100;

const CLAIMABLE: JobStatus[] = ['queued', 'running', 'waiting'];

/** The name-level rules of a name's flow document: holds, global concurrency, an unkeyed rate limit. */
function nameRules(limits: FlowLimits): PermitRules {
  const rules: PermitRules = { concurrencyKind: 'globalConcurrency' };
  if (limits.globalConcurrency !== undefined) rules.concurrency = limits.globalConcurrency;
  if (limits.rateLimit && !limits.rateLimit.keyed) rules.rate = { limit: limits.rateLimit.limit, perMs: limits.rateLimit.perMs };
  return rules;
}

/** Whether a name's document counts anything (else it only carries holds, and a read decides). */
const counts = (rules: PermitRules): boolean => rules.concurrency !== undefined || rules.rate !== undefined;

/** Whether jobs of this name are served by key (grouped, or rate-limited per key). */
const isKeyed = (limits: FlowLimits): boolean => limits.group !== undefined || limits.rateLimit?.keyed === true;

/** A candidate of a keyed name: its key (`flowKey`) and the keys its permits are asked of. */
type KeyedCandidate = Pick<JobDocument, '_id' | 'flowKey' | 'groupKey' | 'rateLimitKey'>;

/** Permits granted in one round, by document, to hand back those of jobs not won. */
class RoundGrants {
  readonly #byDoc = new Map<string, { id: FlowId; tokens: string[] }>();

  add(id: FlowId, tokens: string[]): void {
    if (tokens.length === 0) return;
    const key = JSON.stringify([id.n, id.g ?? null, id.r ?? null]);
    const entry = this.#byDoc.get(key);
    if (entry) entry.tokens.push(...tokens);
    else this.#byDoc.set(key, { id, tokens: [...tokens] });
  }

  /** Hands back every permit whose token is not in `won`. */
  async giveBackUnused(permits: FlowPermits, won: Set<string>): Promise<void> {
    await Promise.all(
      [...this.#byDoc.values()].map(({ id, tokens }) =>
        permits.giveBack(
          id,
          tokens.filter((t) => !won.has(t)),
        ),
      ),
    );
  }
}

/**
 * Claims of requests that carry flow limits, on MongoDB. Permits are granted by one atomic update
 * of a name's (or key's) flow document ({@link FlowPermits.acquire}) and a job is leased only under
 * the token of a permit; permits of jobs another claim took meanwhile go back. So concurrent claims
 * of any number of engines never start more than a limit allows, and no claim reads a count and
 * then writes on the strength of it.
 *
 * - Names without keys are claimed in claim order across names: each round reads candidates,
 *   asks each limited name for as many permits as it has candidates, and leases those that got one.
 *   A claim of one job asks the permit, then leases under it (see `#claimOne`).
 * - Names with keys (a group, a per-key rate limit) are claimed key by key from the `loom_flow_key`
 *   index, in key order starting after the last key this store served: keys whose document says
 *   they are full until later (`f`) are left out of the index range after the first read (made
 *   beside the read of the full keys, so their candidates there are dropped); each key met
 *   gets as many of its jobs as it has room for and the claim needs, then the next key's turn.
 * - The two kinds take turns being served first, claim by claim, so neither starves the other.
 */
export class MongoFlowClaims implements FlowClaims {
  /** Per keyed name: the last key this store served (the next claim starts after it). */
  readonly #lastKey = new Map<string, string>();
  #turn = 0;

  constructor(
    private readonly jobs: Collection<JobDocument>,
    private readonly permits: FlowPermits,
    private readonly logger: StoreLogger,
    /** The `maxTimeMS` of the claim's writes (see `claimJobs`). */
    private readonly maxTimeMS?: number,
  ) {}

  async claim(req: ClaimRequest & SetAside, lease: { owner: string; until: Date }, now: Date, limit: number): Promise<JobRecord[]> {
    const queues = [...new Set(requireStrings(req.queues, 'claim queues'))];
    const names = claimableNames(req);
    const limitsOf = new Map<string, FlowLimits>();
    for (const limits of req.flow ?? []) if (names.includes(limits.name)) limitsOf.set(limits.name, limits);
    const keyed = names.filter((name) => limitsOf.has(name) && isKeyed(limitsOf.get(name)!));
    const others = names.filter((name) => !keyed.includes(name));
    const holds: FlowHold[] = [];
    const claimed: JobDocument[] = [];
    const ctx: ClaimContext = { queues, limitsOf, lease, now, holds, claimed, setAside: req.setAside };
    const keyedFirst = keyed.length > 0 && (others.length === 0 || this.#turn++ % 2 === 0);
    try {
      if (keyedFirst) await this.#claimKeyed(ctx, keyed, limit);
      if (claimed.length < limit && others.length > 0) {
        const limited = others.filter((name) => limitsOf.has(name));
        if (limit - claimed.length === 1 && limited.length === 1) await this.#claimOne(ctx, others, limited[0]!);
        else await this.#claimInOrder(ctx, others, limit);
      }
      if (!keyedFirst && claimed.length < limit && keyed.length > 0) await this.#claimKeyed(ctx, keyed, limit);
    } catch (err) {
      if (claimed.length === 0) throw err;
      this.logger.warn({ err, jobIds: claimed.map((d) => d._id.toHexString()) }, 'a flow-limited claim failed part way; returning the jobs claimed before it');
    }
    reportFlowHolds(req.onHeld, holds);
    return sortForClaim(claimed).map(toJobRecord);
  }

  /**
   * One job, when one name of the claim has limits: that name grants a permit first (one atomic
   * update of its flow document), then one `findAndModify` leases the best claimable job under the
   * permit's token — two commands, the plain claim's one plus the permit. A refused permit leases
   * nothing of that name (a held job is never leased, so it keeps its attempt, its debounce key and
   * its start time): the claim then takes the best job of its other names, if any. A permit the
   * leased job turned out not to need (it is of another name, or there was none) goes back.
   */
  async #claimOne(ctx: ClaimContext, names: string[], limitedName: string): Promise<void> {
    const { queues, now, limitsOf, lease } = ctx;
    const limits = limitsOf.get(limitedName)!;
    const rules = nameRules(limits);
    const token = randomUUID();
    const grant = await this.permits.acquire(flowId(limitedName), [token], rules, now, lease.until);
    if (grant.hold) ctx.holds.push({ name: limitedName, ...grant.hold });
    const granted = grant.granted.length > 0;
    const open = granted ? names : names.filter((name) => name !== limitedName);
    if (open.length === 0) return;
    let doc: JobDocument | null;
    try {
      doc = await claimBest(this.jobs, { queues, names: open, now, setAside: ctx.setAside }, { ...lease, token }, now, this.maxTimeMS);
    } catch (err) {
      if (granted && counts(rules)) await this.permits.giveBack(flowId(limitedName), [token]);
      throw err;
    }
    if (granted && counts(rules) && doc?.name !== limitedName) await this.permits.giveBack(flowId(limitedName), [token]);
    if (!doc) return;
    if (doc.name === limitedName && limits.globalConcurrency !== undefined) this.permits.holding(token, flowId(limitedName), limits.globalConcurrency);
    ctx.claimed.push(doc);
  }

  /**
   * Names without keys, in claim order across them (as `claimBatch`): each round reads the due
   * candidates, asks each limited name's document for as many permits as it has candidates, and
   * leases the candidates that got one. A name refused a permit sits out the next rounds.
   */
  async #claimInOrder(ctx: ClaimContext, names: string[], limit: number): Promise<void> {
    const { queues, limitsOf, lease, now } = ctx;
    let open = names;
    for (let round = 0; ctx.claimed.length < limit && open.length > 0 && round < MAX_ROUNDS; round++) {
      const wanted = limit - ctx.claimed.length;
      const candidates = await readCandidates(this.jobs, claimGroups({ queues, names: open, now, setAside: ctx.setAside }), wanted, true);
      if (candidates.length === 0) break;
      const byName = groupBy(candidates, (candidate) => candidate.name);
      const leaseRound = new ClaimRound();
      const leases: { _id: ObjectId; token: string }[] = [];
      const grants = new RoundGrants();
      const refused = new Map<string, { hold: NonNullable<Grant['hold']>; granted: string[] }>();
      await Promise.all(
        [...byName].map(async ([name, named]) => {
          const ids = named.map((candidate) => candidate._id);
          const tokens = ids.map((id) => leaseRound.tokenFor(id));
          const limits = limitsOf.get(name);
          if (!limits) {
            ids.forEach((_id, i) => leases.push({ _id, token: tokens[i]! }));
            return;
          }
          const rules = nameRules(limits);
          const grant = await this.permits.acquire(flowId(name), tokens, rules, now, lease.until);
          if (counts(rules)) grants.add(flowId(name), grant.granted);
          grant.granted.forEach((token, i) => leases.push({ _id: ids[i]!, token }));
          if (grant.hold) refused.set(name, { hold: grant.hold, granted: grant.granted });
        }),
      );
      const won = await this.#take(ctx, { queues, names, now }, leaseRound, leases, grants);
      const wonTokens = new Set<string>();
      for (const doc of won) {
        wonTokens.add(doc.lease!.token);
        const limits = limitsOf.get(doc.name);
        if (limits?.globalConcurrency !== undefined) this.permits.holding(doc.lease!.token, flowId(doc.name), limits.globalConcurrency);
      }
      ctx.claimed.push(...won);
      for (const [name, { hold, granted }] of refused) {
        // A name is full when every permit it granted went to a job. Permits of candidates another
        // claim took went back, and the name has that room again: it stays in the next round
        // (telling the engine it is full would idle that room until the window moves).
        if (granted.every((token) => wonTokens.has(token))) {
          ctx.holds.push({ name, ...hold });
          open = open.filter((n) => n !== name);
        }
      }
      if (candidates.length < wanted && refused.size === 0) break;
    }
  }

  /** Names served by key. */
  async #claimKeyed(ctx: ClaimContext, names: string[], limit: number): Promise<void> {
    for (const name of names) {
      if (ctx.claimed.length >= limit) return;
      await this.#claimByKey(ctx, name, ctx.limitsOf.get(name)!, limit - ctx.claimed.length);
    }
  }

  /**
   * One keyed name, in rounds: read the next candidates in key order after the last key served
   * (wrapping around once), leaving out the keys known full; the name grants permits for them,
   * then each key, at once, for its own; lease those that got both.
   */
  async #claimByKey(ctx: ClaimContext, name: string, limits: FlowLimits, budget: number): Promise<void> {
    const { queues, lease, now } = ctx;
    const kind = limits.group !== undefined ? 'g' : 'r';
    const rules = nameRules(limits);
    let after = this.#lastKey.get(name);
    // The first candidates are read beside the full keys (one round trip, not two): candidates of
    // keys found full are dropped, and later reads leave those keys out. A name that counts nothing
    // itself (only its keys do) has only a hold to respect: the read of the full keys fetches it too.
    const [{ keys: full, heldUntil: nameHeld }, firstRead] = await Promise.all([
      this.permits.fullKeys(name, kind, now, !counts(rules)),
      this.#readKeyed(ctx, name, after, [], budget),
    ]);
    if (nameHeld) {
      ctx.holds.push({ name, by: 'rateLimit', until: nameHeld });
      return;
    }
    // Keys full until later are not read (after the first read); they are reported held so the engine wakes when they open.
    for (const { key, until } of full) ctx.holds.push({ name, key, by: kind === 'g' ? 'group' : 'rateLimit', until });
    const skip = full.map((f) => f.key);
    let wrapped = after === undefined;
    let served = 0;
    for (let round = 0; served < budget && round < MAX_ROUNDS; round++) {
      const wanted = budget - served;
      const read = round === 0 ? firstRead : await this.#readKeyed(ctx, name, after, skip, wanted);
      const candidates = round === 0 && skip.length > 0 ? read.filter((c) => !skip.includes(c.flowKey!)) : read;
      if (candidates.length === 0) {
        if (read.length === wanted) {
          // Only candidates of keys found full: past them, the next keys.
          after = read[read.length - 1]!.flowKey!;
          continue;
        }
        if (wrapped) break;
        wrapped = true;
        after = undefined;
        continue;
      }
      const leaseRound = new ClaimRound();
      const tokens = candidates.map((candidate) => leaseRound.tokenFor(candidate._id));
      const nameGrant: Grant = counts(rules) ? await this.permits.acquire(flowId(name), tokens, rules, now, lease.until) : { granted: tokens };
      // The cursor moves to the last key whose candidates got the name's permits: keys the name had
      // no room for keep their turn.
      if (nameGrant.granted.length > 0) {
        after = candidates[nameGrant.granted.length - 1]!.flowKey!;
        this.#lastKey.set(name, after);
      }
      const grants = new RoundGrants();
      if (counts(rules)) grants.add(flowId(name), nameGrant.granted);
      const admitted = candidates.slice(0, nameGrant.granted.length).map((candidate, i) => ({ candidate, token: nameGrant.granted[i]! }));
      const byKey = groupBy(admitted, (one) => one.candidate.flowKey!);
      const leases: { _id: ObjectId; token: string }[] = [];
      const groupOf = new Map<string, FlowId>();
      const keys = [...byKey.values()];
      const slots = await this.#acquireGroups(ctx, name, limits, keys, grants, skip);
      const kept = await this.#acquireRates(
        ctx,
        name,
        limits,
        keys.map((list, i) => list.slice(0, slots[i])),
        grants,
        skip,
      );
      keys.forEach((list, i) => {
        for (const { candidate, token } of list.slice(0, kept[i])) {
          leases.push({ _id: candidate._id, token });
          if (limits.group && candidate.groupKey !== undefined) groupOf.set(token, flowId(name, { group: candidate.groupKey }));
        }
      });
      const won = await this.#take(ctx, { queues, names: [name], now }, leaseRound, leases, grants);
      for (const doc of won) {
        const token = doc.lease!.token;
        if (limits.globalConcurrency !== undefined) this.permits.holding(token, flowId(name), limits.globalConcurrency);
        const group = groupOf.get(token);
        if (group) this.permits.holding(token, group, limits.group!.concurrency);
      }
      ctx.claimed.push(...won);
      served += won.length;
      // The name is full only when every permit it granted went to a job; permits of candidates
      // whose key had no room went back, and the next round offers them to the next keys.
      if (nameGrant.hold) {
        if (won.length === nameGrant.granted.length) {
          ctx.holds.push({ name, ...nameGrant.hold });
          return;
        }
        continue;
      }
      if (read.length < wanted) {
        // Every key after the cursor was seen: the keys before it get their turn next.
        if (wrapped) break;
        wrapped = true;
        after = undefined;
      }
    }
  }

  /** Up to `wanted` claimable jobs of `name` in key order after `after`, keys in `skip` left out (from `loom_flow_key`). */
  #readKeyed({ queues, now, setAside }: ClaimContext, name: string, after: string | undefined, skip: string[], wanted: number): Promise<KeyedCandidate[]> {
    const flowKey: Filter<JobDocument>['flowKey'] = after === undefined ? { $gte: '' } : { $gt: after };
    if (skip.length > 0) Object.assign(flowKey as object, { $nin: skip });
    const filter: Filter<JobDocument> = { queue: { $in: queues }, name, flowKey, claimAt: { $lte: now }, status: { $in: CLAIMABLE } };
    if (setAside !== undefined && setAside.length > 0) filter._id = { $nin: [...setAside] };
    return this.jobs
      .find(filter, {
        sort: { flowKey: 1, priority: -1, runAt: 1, _id: 1 },
        hint: FLOW_KEY_INDEX,
        limit: wanted,
        projection: { _id: 1, flowKey: 1, groupKey: 1, rateLimitKey: 1 },
      })
      .toArray();
  }

  /**
   * The group slots of each key's candidates (each list all of one `flowKey`, so of one group): all
   * the keys' documents asked at once ({@link FlowPermits.acquireMany}: two commands however many
   * keys the round met). Returns, per key, how many of its candidates (a prefix) got a slot; a key
   * refused is reported held and left out of this claim's later rounds.
   */
  async #acquireGroups(
    ctx: ClaimContext,
    name: string,
    limits: FlowLimits,
    keys: { candidate: KeyedCandidate; token: string }[][],
    grants: RoundGrants,
    skip: string[],
  ): Promise<number[]> {
    const group = limits.group;
    const grouped = keys.map((list) => (group && list[0]!.candidate.groupKey !== undefined ? list[0]!.candidate.groupKey : undefined));
    const asked = keys.flatMap((list, i) =>
      grouped[i] === undefined ? [] : [{ i, id: flowId(name, { group: grouped[i]! }), tokens: list.map((g) => g.token) }],
    );
    if (asked.length === 0) return keys.map((list) => list.length);
    const rules: PermitRules = { concurrency: group!.concurrency, concurrencyKind: 'group' };
    const got = await this.permits.acquireMany(
      asked.map(({ id, tokens }) => ({ id, tokens, rules })),
      ctx.now,
      ctx.lease.until,
    );
    const slots = keys.map((list) => list.length);
    asked.forEach(({ i, id }, j) => {
      const grant = got[j]!;
      grants.add(id, grant.granted);
      slots[i] = grant.granted.length;
      if (grant.hold) {
        ctx.holds.push({ name, key: grouped[i]!, ...grant.hold });
        skip.push(keys[i]![0]!.candidate.flowKey!);
      }
    });
    return slots;
  }

  /**
   * The per-key rate-limit starts of each key's candidates that got their group slot (each list all
   * of one `flowKey`; under a group, its candidates may have several rate-limit keys): every
   * rate-limit key met asks for all its candidates' starts at once, all keys in one
   * {@link FlowPermits.acquireMany} (two commands, however many keys and jobs). Returns, per list,
   * how many of its candidates (a prefix, in claim order) got their start; starts granted past a
   * list's prefix go back with the round's unused permits. A key refused is reported held (and,
   * without a group, left out of this claim's later rounds).
   */
  async #acquireRates(
    ctx: ClaimContext,
    name: string,
    limits: FlowLimits,
    lists: { candidate: KeyedCandidate; token: string }[][],
    grants: RoundGrants,
    skip: string[],
  ): Promise<number[]> {
    const rateLimit = limits.rateLimit;
    if (!rateLimit?.keyed) return lists.map((list) => list.length);
    const byKey = groupBy(lists.flat(), ({ candidate }) => candidate.rateLimitKey ?? '');
    const rules: PermitRules = { rate: { limit: rateLimit.limit, perMs: rateLimit.perMs }, concurrencyKind: 'group' };
    const keys = [...byKey.keys()];
    const got = await this.permits.acquireMany(
      keys.map((key) => ({ id: flowId(name, { rate: key }), tokens: byKey.get(key)!.map(({ token }) => token), rules })),
      ctx.now,
      ctx.lease.until,
    );
    const granted = new Set<string>();
    keys.forEach((key, i) => {
      const grant = got[i]!;
      grants.add(flowId(name, { rate: key }), grant.granted);
      for (const token of grant.granted) granted.add(token);
      if (grant.hold) ctx.holds.push({ name, key, ...grant.hold });
    });
    return lists.map((list) => {
      const kept = list.findIndex(({ token }) => !granted.has(token));
      if (kept === -1) return list.length;
      if (!limits.group) skip.push(list[0]!.candidate.flowKey!);
      return kept;
    });
  }

  /**
   * Leases `leases` (each token made by `round.tokenFor` of its job); the round's permits of jobs lost to another claim go
   * back. If leasing fails, every permit of the round goes back before the error surfaces.
   */
  async #take(
    ctx: ClaimContext,
    query: { queues: string[]; names: string[]; now: Date },
    round: ClaimRound,
    leases: { _id: ObjectId; token: string }[],
    grants: RoundGrants,
  ): Promise<JobDocument[]> {
    let won: JobDocument[] = [];
    try {
      const ids = leases.map(({ _id }) => _id);
      if (leases.length > 0) won = await takeCandidates(this.jobs, query, round, ids, ctx.lease, ctx.now, this.maxTimeMS);
    } finally {
      await grants.giveBackUnused(this.permits, new Set(won.map((doc) => doc.lease!.token)));
    }
    return won;
  }
}

interface ClaimContext {
  queues: string[];
  limitsOf: Map<string, FlowLimits>;
  lease: { owner: string; until: Date };
  now: Date;
  holds: FlowHold[];
  claimed: JobDocument[];
  /** Jobs an open transaction holds: left out (see held-jobs.ts). */
  setAside?: readonly ObjectId[];
}
