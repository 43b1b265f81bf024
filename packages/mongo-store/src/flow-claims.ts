import { randomUUID } from 'node:crypto';
import type { Collection, Filter, ObjectId } from 'mongodb';
import { reportFlowHolds, type ClaimRequest, type FlowHold, type FlowLimits, type JobRecord, type JobStatus } from '@loom/core';
import { requireStrings } from './arguments.js';
import { claimGroups, readCandidates, sortForClaim, takeCandidates, type FlowClaims } from './claims.js';
import type { JobDocument } from './documents.js';
import { claimableNames } from './filters.js';
import { flowId, type FlowPermits, type PermitRules } from './flow-permits.js';
import { FLOW_KEY_INDEX } from './indexes.js';
import type { StoreLogger } from './options.js';
import { toJobRecord } from './records.js';

/** A safety bound only, as in `claims.ts`. */
const MAX_ROUNDS = 100;

/**
 * The most keys one claim looks at for one grouped name. Keys at their limit cost a write each, so
 * a claim over thousands of busy tenants stops here; the next claim goes on from where this one
 * stopped (the turn order is kept), so every key still gets its turn.
 */
const MAX_KEYS_PER_CLAIM = 64;

const CLAIMABLE: JobStatus[] = ['queued', 'running', 'waiting'];

/** The name-level rules of a name's flow document: holds, global concurrency, an unkeyed rate limit. */
function nameRules(limits: FlowLimits): PermitRules {
  const rules: PermitRules = { concurrencyKind: 'globalConcurrency' };
  if (limits.globalConcurrency !== undefined) rules.concurrency = limits.globalConcurrency;
  if (limits.rateLimit && !limits.rateLimit.keyed) rules.rate = { limit: limits.rateLimit.limit, perMs: limits.rateLimit.perMs };
  return rules;
}

/** Whether jobs of this name are served key by key (grouped, or rate-limited per key). */
const isKeyed = (limits: FlowLimits): boolean => limits.group !== undefined || limits.rateLimit?.keyed === true;

/**
 * Claims of requests that carry flow limits, on MongoDB. Permits come first: a name's (or key's)
 * flow document grants as many as it has room for in one atomic update, and only that many jobs
 * are then leased, each under the token its permit was granted to; permits of jobs another claim
 * took meanwhile are handed back. So concurrent claims of any number of engines never start more
 * than a limit allows, and a claim never reads a count and then writes on the strength of it.
 *
 * Names without keys are claimed as in `claims.ts`, in claim order across names. Names served by
 * key go key by key: the next key (after the last one this store served, wrapping around) with a
 * claimable job, found from the `loom_flow_key` index without scanning other keys' jobs, gets one
 * job per turn. The two kinds take turns being served first, claim by claim, so neither starves
 * the other when a claim has less room than there are due jobs.
 */
export class MongoFlowClaims implements FlowClaims {
  /** Per grouped name: the key served last by this store. */
  readonly #lastKey = new Map<string, string>();
  #turn = 0;

  constructor(
    private readonly jobs: Collection<JobDocument>,
    private readonly permits: FlowPermits,
    private readonly logger: StoreLogger,
  ) {}

  async claim(req: ClaimRequest, lease: { owner: string; until: Date }, now: Date, limit: number): Promise<JobRecord[]> {
    const queues = [...new Set(requireStrings(req.queues, 'claim queues'))];
    const names = claimableNames(req);
    const limitsOf = new Map<string, FlowLimits>();
    for (const limits of req.flow ?? []) if (names.includes(limits.name)) limitsOf.set(limits.name, limits);
    const keyed = names.filter((name) => limitsOf.has(name) && isKeyed(limitsOf.get(name)!));
    const others = names.filter((name) => !keyed.includes(name));
    const holds: FlowHold[] = [];
    const claimed: JobDocument[] = [];
    const ctx: ClaimContext = { queues, limitsOf, lease, now, holds, claimed };
    const keyedFirst = keyed.length > 0 && (others.length === 0 || this.#turn++ % 2 === 0);
    try {
      if (keyedFirst) await this.#claimKeyed(ctx, keyed, limit);
      if (claimed.length < limit && others.length > 0) await this.#claimInOrder(ctx, others, limit);
      if (!keyedFirst && claimed.length < limit && keyed.length > 0) await this.#claimKeyed(ctx, keyed, limit);
    } catch (err) {
      if (claimed.length === 0) throw err;
      this.logger.warn({ err, jobIds: claimed.map((d) => d._id.toHexString()) }, 'a flow-limited claim failed part way; returning the jobs claimed before it');
    }
    reportFlowHolds(req.onHeld, holds);
    return sortForClaim(claimed).map(toJobRecord);
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
      const query = { queues, names: open, now };
      const candidates = await readCandidates(this.jobs, claimGroups(query), wanted, true);
      if (candidates.length === 0) break;
      const byName = new Map<string, ObjectId[]>();
      for (const candidate of candidates) byName.set(candidate.name, [...(byName.get(candidate.name) ?? []), candidate._id]);
      const leases: { _id: ObjectId; token: string }[] = [];
      const granted = new Map<string, string[]>();
      let refused = false;
      await Promise.all(
        [...byName].map(async ([name, ids]) => {
          const limits = limitsOf.get(name);
          const tokens = ids.map(() => randomUUID());
          if (!limits) {
            ids.forEach((_id, i) => leases.push({ _id, token: tokens[i]! }));
            return;
          }
          const grant = await this.permits.acquire(flowId(name), tokens, nameRules(limits), now, lease.until);
          granted.set(name, grant.granted);
          grant.granted.forEach((token, i) => leases.push({ _id: ids[i]!, token }));
          if (grant.hold) {
            ctx.holds.push({ name, ...grant.hold });
            open = open.filter((n) => n !== name);
            refused = true;
          }
        }),
      );
      const won = await this.#take(ctx, { queues, names, now }, leases, granted, (name) => ({ id: flowId(name), concurrency: limitsOf.get(name)?.globalConcurrency }));
      ctx.claimed.push(...won);
      if (candidates.length < wanted && !refused) break;
    }
  }

  /**
   * Leases `leases`; permits of the ones lost to another claim go back to their documents, and
   * the slots of those won are remembered for heartbeats and release. If leasing fails, every
   * permit of the round goes back before the error surfaces.
   */
  async #take(
    ctx: ClaimContext,
    query: { queues: string[]; names: string[]; now: Date },
    leases: { _id: ObjectId; token: string }[],
    granted: Map<string, string[]>,
    slotOf: (name: string, doc: JobDocument) => { id: ReturnType<typeof flowId>; concurrency?: number },
  ): Promise<JobDocument[]> {
    if (leases.length === 0) return [];
    let won: JobDocument[];
    try {
      won = await takeCandidates(this.jobs, query, leases, ctx.lease, ctx.now);
    } catch (err) {
      await Promise.all([...granted].map(([name, tokens]) => this.permits.giveBack(flowId(name), tokens).catch(() => undefined)));
      throw err;
    }
    const wonTokens = new Set(won.map((doc) => doc.lease!.token));
    await Promise.all([...granted].map(([name, tokens]) => this.permits.giveBack(flowId(name), tokens.filter((t) => !wonTokens.has(t)))));
    for (const doc of won) {
      if (!granted.has(doc.name)) continue;
      const slot = slotOf(doc.name, doc);
      if (slot.concurrency !== undefined) this.permits.holding(doc.lease!.token, slot.id, slot.concurrency);
    }
    return won;
  }

  /** Names served key by key, one job per key per turn. */
  async #claimKeyed(ctx: ClaimContext, names: string[], limit: number): Promise<void> {
    for (const name of names) {
      if (ctx.claimed.length >= limit) return;
      await this.#claimByKey(ctx, name, ctx.limitsOf.get(name)!, limit - ctx.claimed.length);
    }
  }

  async #claimByKey(ctx: ClaimContext, name: string, limits: FlowLimits, budget: number): Promise<void> {
    const { queues, lease, now } = ctx;
    const skip: string[] = [];
    let after = this.#lastKey.get(name);
    let head = await this.#nextHead(queues, name, after, skip, now);
    if (!head && after !== undefined) head = await this.#nextHead(queues, name, (after = undefined), skip, now);
    if (!head) return;
    // The name's own rules (holds, global concurrency, an unkeyed rate) first, for the whole budget.
    const rules = nameRules(limits);
    const nameGrant = await this.permits.acquire(flowId(name), Array.from({ length: budget }, () => randomUUID()), rules, now, lease.until);
    const tokens = [...nameGrant.granted];
    if (tokens.length === 0 && nameGrant.hold) ctx.holds.push({ name, ...nameGrant.hold });
    try {
      // Past the last key the turns start again from the first, as long as the last pass served a key.
      let servedSinceStart = after !== undefined;
      for (let examined = 0, rounds = 0; tokens.length > 0 && examined < MAX_KEYS_PER_CLAIM && rounds < MAX_ROUNDS; rounds++) {
        if (!head) {
          if (!servedSinceStart) break;
          servedSinceStart = false;
          head = await this.#nextHead(queues, name, (after = undefined), skip, now);
          continue;
        }
        examined += 1;
        const key: string = head.flowKey!;
        const token = tokens[0]!;
        const keyGrants = await this.#acquireKey(ctx, name, limits, head, token);
        if (keyGrants) {
          const [doc] = await takeCandidates(this.jobs, { queues, names: [name], now }, [{ _id: head._id, token }], lease, now).catch(async (err: unknown) => {
            await this.#giveBackKey(keyGrants, token);
            throw err;
          });
          if (doc) {
            tokens.shift();
            ctx.claimed.push(doc);
            this.#lastKey.set(name, key);
            servedSinceStart = true;
            if (limits.globalConcurrency !== undefined) this.permits.holding(token, flowId(name), limits.globalConcurrency);
            if (keyGrants.group) this.permits.holding(token, keyGrants.group, limits.group!.concurrency);
            after = key;
          } else {
            // Another claim took this job first: its key's permits go back; look again from the same place.
            await this.#giveBackKey(keyGrants, token);
          }
        } else {
          skip.push(key);
          after = key;
        }
        head = tokens.length > 0 ? await this.#nextHead(queues, name, after, skip, now) : null;
      }
      if (tokens.length === 0 && nameGrant.hold && nameGrant.granted.length > 0) ctx.holds.push({ name, ...nameGrant.hold });
    } finally {
      const counted = rules.concurrency !== undefined || rules.rate !== undefined;
      if (counted && tokens.length > 0) await this.permits.giveBack(flowId(name), tokens);
    }
  }

  /** The best claimable job of the first key after `after` (not in `skip`), from the flow-key index. */
  async #nextHead(queues: string[], name: string, after: string | undefined, skip: string[], now: Date): Promise<JobDocument | null> {
    const flowKey: Filter<JobDocument>['flowKey'] = after === undefined ? { $gte: '' } : { $gt: after };
    if (skip.length > 0) Object.assign(flowKey as object, { $nin: skip });
    return this.jobs.findOne(
      { queue: { $in: queues }, name, flowKey, claimAt: { $lte: now }, status: { $in: CLAIMABLE } },
      { sort: { flowKey: 1, priority: -1, runAt: 1, _id: 1 }, hint: FLOW_KEY_INDEX, projection: { _id: 1, flowKey: 1, groupKey: 1, rateLimitKey: 1 } },
    );
  }

  /**
   * The permits of one job's keys: a slot of its group, a start of its rate-limit key. Null (and
   * nothing kept) when one is refused, which is reported as a hold of that key.
   */
  async #acquireKey(ctx: ClaimContext, name: string, limits: FlowLimits, head: JobDocument, token: string): Promise<KeyGrants | null> {
    const { now, lease } = ctx;
    const grants: KeyGrants = {};
    if (limits.group && head.groupKey !== undefined) {
      const id = flowId(name, { group: head.groupKey });
      const grant = await this.permits.acquire(id, [token], { concurrency: limits.group.concurrency, concurrencyKind: 'group' }, now, lease.until);
      if (grant.hold) {
        ctx.holds.push({ name, key: head.groupKey, ...grant.hold });
        return null;
      }
      grants.group = id;
    }
    if (limits.rateLimit?.keyed) {
      const key = head.rateLimitKey ?? '';
      const id = flowId(name, { rate: key });
      const grant = await this.permits.acquire(id, [token], { rate: { limit: limits.rateLimit.limit, perMs: limits.rateLimit.perMs }, concurrencyKind: 'group' }, now, lease.until);
      if (grant.hold) {
        ctx.holds.push({ name, key, ...grant.hold });
        await this.#giveBackKey(grants, token);
        return null;
      }
      grants.rate = id;
    }
    return grants;
  }

  async #giveBackKey(grants: KeyGrants, token: string): Promise<void> {
    await Promise.all([grants.group, grants.rate].flatMap((id) => (id ? [this.permits.giveBack(id, [token])] : [])));
  }
}

/** The key-level permits one job got. */
interface KeyGrants {
  group?: ReturnType<typeof flowId>;
  rate?: ReturnType<typeof flowId>;
}

interface ClaimContext {
  queues: string[];
  limitsOf: Map<string, FlowLimits>;
  lease: { owner: string; until: Date };
  now: Date;
  holds: FlowHold[];
  claimed: JobDocument[];
}
