import { MongoBulkWriteError, type ClientSession, type Collection, type Document, type WriteError } from 'mongodb';
import { compareFlowUsage, MAX_FLOW_USAGE, type FlowHeldBy, type FlowHold, type FlowHoldRecord, type FlowUsage } from '@loom/core';
import { requireDate, requireString } from '../arguments.js';
import type { FlowDocument, FlowId, JobDocument } from '../schema/documents.js';
import type { StoreLogger } from '../options.js';
import { FLOW_FULL_INDEX } from '../schema/indexes.js';
import { DUPLICATE_KEY, isDuplicateKey } from '../store-errors.js';

/** The id of a name's flow document, or of one of its keys'. Always this field order. */
export function flowId(name: string, key?: { group: string } | { rate: string }): FlowId {
  if (key === undefined) return { n: name };
  return 'group' in key ? { n: name, g: key.group } : { n: name, r: key.rate };
}

/** What one flow document limits for the permits asked of it. */
export interface PermitRules {
  /** Running jobs at once (global or per group key). */
  concurrency?: number;
  /** Starts per window. */
  rate?: { limit: number; perMs: number };
  /** What a full `concurrency` is reported as. */
  concurrencyKind: 'globalConcurrency' | 'group';
}

/** What an acquisition got: the tokens granted (a prefix of those asked), and the hold when not all were. */
export interface Grant {
  granted: string[];
  hold?: Omit<FlowHold, 'name' | 'key'>;
}

/** A slot a running job holds, for its heartbeats and its release. */
interface HeldSlot {
  id: FlowId;
  concurrency: number;
}

const MAX_UPSERT_ROUNDS = 3;

/**
 * A window's grants that left it stay in `s` until this many have: then one update drops them all.
 * Dropping them at every grant shifted the whole list each time, and an update that shifts a list
 * rewrites (and logs, in the oplog and the change event) every element; appending rewrites one.
 */
export const STALE_STARTS_KEPT = 32;

/** The grants of `s` still in the window that starts after `windowStart`. */
const liveGrants = (input: string, windowStart: Date): Document => ({ $filter: { input, cond: { $gt: ['$$this.a', windowStart] } } });

/** The starts in the window (`s` may hold grants that left it): the sum of the counts of those still in it. */
const startsInWindow = (windowStart: Date): Document => ({ $let: { vars: { live: liveGrants('$s', windowStart) }, in: { $sum: '$$live.c' } } });

/** The grants of `entries` still in the window at `now` (one entry per grant). */
const liveIn = <T extends { a: Date }>(entries: T[] | undefined, now: Date, perMs: number): T[] =>
  (entries ?? []).filter((entry) => entry.a.getTime() > now.getTime() - perMs);

/** Starts in `entries` (one entry per grant). */
const startsIn = (entries: { c: number }[] | undefined): number => (entries ?? []).reduce((sum, entry) => sum + entry.c, 0);

/**
 * The update that grants up to `tokens.length` permits in one atomic write of one flow document:
 * expired slots (lease ended) and starts that left the window are dropped, then as many tokens as
 * there is room for under every rule (none while a hold is in force) become slots ending at
 * `leaseUntil` (one per token) and starts at `now` (one entry for the grant). The room is computed inside the update, so concurrent claims
 * never grant more than the limit between them: there is no read before the write.
 */
export function acquirePipeline(tokens: string[], rules: PermitRules, now: Date, leaseUntil: Date, keyDoc: boolean): Document[] {
  const limits: unknown[] = [tokens.length, { $cond: [{ $gt: [{ $ifNull: ['$b', null] }, now] }, 0, tokens.length] }];
  const prune: Document = {};
  if (rules.concurrency !== undefined) {
    prune.h = { $filter: { input: { $ifNull: ['$h', []] }, cond: { $gte: ['$$this.u', now] } } };
    limits.push({ $subtract: [rules.concurrency, { $size: '$h' }] });
  }
  const windowStart = rules.rate === undefined ? undefined : new Date(now.getTime() - rules.rate.perMs);
  if (rules.rate !== undefined) {
    // Grants that left the window are dropped once STALE_STARTS_KEPT of them have (see there).
    const kept = {
      $let: {
        vars: { live: liveGrants('$$all', windowStart!) },
        in: { $cond: [{ $gte: [{ $subtract: [{ $size: '$$all' }, { $size: '$$live' }] }, STALE_STARTS_KEPT] }, '$$live', '$$all'] },
      },
    };
    prune.s = { $let: { vars: { all: { $ifNull: ['$s', []] } }, in: kept } };
    limits.push({ $subtract: [rules.rate.limit, startsInWindow(windowStart!)] });
    // Starts are granted in time order (`t`: the latest `now` the window was judged at). A claim whose
    // `now` is behind it (its request was overtaken by a later one) gets nothing: the later claim
    // pruned starts this one would still count, so granting it could put more than `limit` starts in
    // one window. It is told to come back at `t`.
    limits.push({ $cond: [{ $lt: [now, { $ifNull: ['$t', now] }] }, 0, tokens.length] });
    prune.t = { $max: [{ $ifNull: ['$t', now] }, now] };
  }
  // `$let` cannot span fields, so the room is computed once per field: same inputs, same answer.
  const room = { $max: [0, { $min: limits }] };
  const grantedOnto = (field: string, granted: Document[] | Document): Document => ({
    $let: { vars: { room }, in: { $concatArrays: [`$${field}`, { $cond: [{ $gt: ['$$room', 0] }, granted, []] }] } },
  });
  const grants: Document = {};
  // One slot per token granted (each run frees its own); one entry for all the starts of this grant.
  if (rules.concurrency !== undefined) grants.h = grantedOnto('h', { $slice: [tokens.map((t) => ({ t, u: leaseUntil })), '$$room'] });
  if (rules.rate !== undefined) grants.s = grantedOnto('s', [{ t: { $slice: [tokens, '$$room'] }, c: '$$room', a: now }]);
  const limitsUsed: Document = {};
  if (rules.concurrency !== undefined) limitsUsed.c = rules.concurrency;
  if (rules.rate !== undefined) Object.assign(limitsUsed, { r: rules.rate.limit, p: rules.rate.perMs });
  const stages: Document[] = [{ $set: prune }, { $set: { ...grants, l: { $literal: limitsUsed } } }];
  if (!keyDoc) return stages;
  // `f` (keys' documents only): when the document is full after this grant, the instant it can grant
  // again at the earliest (every exhausted rule reopened): claims of keyed names leave such keys out
  // of their index range.
  const reopens: unknown[] = [{ $cond: [{ $gt: [{ $ifNull: ['$b', null] }, now] }, '$b', null] }];
  if (rules.concurrency !== undefined) reopens.push({ $cond: [{ $gte: [{ $size: '$h' }, rules.concurrency] }, { $add: [{ $min: '$h.u' }, 1] }, null] });
  if (rules.rate !== undefined) {
    const oldestLive = { $let: { vars: { live: liveGrants('$s', windowStart!) }, in: { $min: '$$live.a' } } };
    reopens.push({ $cond: [{ $gte: [startsInWindow(windowStart!), rules.rate.limit] }, { $add: [oldestLive, rules.rate.perMs] }, null] });
  }
  const full = { $let: { vars: { f: { $max: reopens } }, in: { $cond: [{ $eq: ['$$f', null] }, '$$REMOVE', '$$f'] } } };
  return [...stages, { $set: { f: full } }];
}

/** A flow document's id as a map key. */
const flowKeyOf = (id: FlowId): string => JSON.stringify([id.n, id.g ?? null, id.r ?? null]);

/** How many of `tokens` the document after an acquisition holds (they were appended in order). */
function grantedOf(doc: FlowDocument | null, tokens: string[], rules: PermitRules): string[] {
  if (!doc) return [];
  const present = new Set(rules.concurrency !== undefined ? doc.h?.map((slot) => slot.t) : doc.s?.flatMap((grant) => grant.t));
  return tokens.filter((t) => present.has(t));
}

/** Why not every permit was granted, and when that opens where the document tells. */
function holdOf(doc: FlowDocument, rules: PermitRules, now: Date): Grant['hold'] {
  if (doc.b instanceof Date && doc.b > now) return { by: 'rateLimit', until: doc.b };
  const live = rules.rate ? liveIn(doc.s, now, rules.rate.perMs) : [];
  if (rules.rate && startsIn(live) >= rules.rate.limit) {
    const oldest = Math.min(...live.map((s) => s.a.getTime()));
    return { by: 'rateLimit', until: new Date(Math.max(oldest + rules.rate.perMs, doc.t?.getTime() ?? 0)) };
  }
  if (rules.rate && doc.t instanceof Date && doc.t > now) return { by: 'rateLimit', until: doc.t };
  const ends = (doc.h ?? []).map((h) => h.u.getTime());
  return ends.length === 0 ? { by: rules.concurrencyKind } : { by: rules.concurrencyKind, until: new Date(Math.min(...ends) + 1) };
}

/**
 * Concurrency slots, rate-limit starts and holds in the flow collection. Every grant is one atomic
 * update of one document ({@link acquirePipeline}); a slot carries the lease token of the job that
 * holds it and ends with its lease, so a crashed engine's slots free themselves when its leases
 * expire. The slots this store granted are remembered here (by token) so heartbeats extend them
 * and the run's end frees them at once; a slot this process forgot (it restarted) still ends with
 * its lease.
 */
export class FlowPermits {
  readonly #held = new Map<string, HeldSlot[]>();

  constructor(
    private readonly flow: Collection<FlowDocument>,
    private readonly logger: StoreLogger,
  ) {}

  /** Grants up to `tokens.length` permits of one document under `rules`; the tokens granted are a prefix of `tokens`. */
  async acquire(id: FlowId, tokens: string[], rules: PermitRules, now: Date, leaseUntil: Date): Promise<Grant> {
    if (tokens.length === 0) return { granted: [] };
    if (rules.concurrency === undefined && rules.rate === undefined) {
      const until = await this.heldUntil(id, now);
      return until ? { granted: [], hold: { by: 'rateLimit', until } } : { granted: tokens };
    }
    const update = acquirePipeline(tokens, rules, now, leaseUntil, id.g !== undefined || id.r !== undefined);
    // Granted tokens are appended last: the reply carries only the last entries of the list that
    // says (one slot per token; one entry for the grant's starts), not every slot or start in the
    // window, and not the other list (a projection of only `$slice` returns every other field).
    const projection = rules.concurrency !== undefined ? { h: { $slice: -tokens.length }, s: 0 } : { s: { $slice: -1 }, h: 0 };
    let doc: FlowDocument | null = null;
    for (let round = 0; ; round++) {
      try {
        doc = await this.flow.findOneAndUpdate({ _id: id }, update, { upsert: true, returnDocument: 'after', projection });
        break;
      } catch (err) {
        // Two claims creating the document at once: the loser's update now finds it.
        if (!isDuplicateKey(err) || round + 1 >= MAX_UPSERT_ROUNDS) throw err;
      }
    }
    const granted = grantedOf(doc, tokens, rules);
    if (granted.length === tokens.length || !doc) return { granted };
    // Not all granted: when it opens again takes the whole document (one more read, on refusals only).
    const whole = await this.flow.findOne({ _id: id });
    return { granted, hold: holdOf(whole ?? doc, rules, now) };
  }

  /**
   * Permits of several documents at once (each request as {@link acquire}): one unordered bulk of
   * the same atomic updates, one per document, then one read of those documents to see which tokens
   * each granted. Two commands for any number of documents, where asking each would be one command
   * per document; the grants are decided by the updates alone (a token is only ever appended by the
   * update that grants it, and only its own claim takes it out), the read just learns them.
   */
  async acquireMany(requests: { id: FlowId; tokens: string[]; rules: PermitRules }[], now: Date, leaseUntil: Date): Promise<Grant[]> {
    const asked = requests.filter((r) => r.tokens.length > 0);
    if (asked.length <= 1 || asked.some((r) => r.rules.concurrency === undefined && r.rules.rate === undefined)) {
      return Promise.all(requests.map((r) => this.acquire(r.id, r.tokens, r.rules, now, leaseUntil)));
    }
    let pending = asked;
    for (let round = 0; pending.length > 0; round++) {
      const statements = pending.map((r) => ({
        updateOne: {
          filter: { _id: r.id },
          update: acquirePipeline(r.tokens, r.rules, now, leaseUntil, r.id.g !== undefined || r.id.r !== undefined),
          upsert: true,
        },
      }));
      try {
        await this.flow.bulkWrite(statements, { ordered: false });
        pending = [];
      } catch (err) {
        // Claims creating a document at once: the losers' updates now find it, so they go again.
        const writeErrors = err instanceof MongoBulkWriteError ? [err.writeErrors as WriteError[] | WriteError].flat() : [];
        if (writeErrors.length === 0 || !writeErrors.every((e) => e.code === DUPLICATE_KEY) || round + 1 >= MAX_UPSERT_ROUNDS) throw err;
        pending = writeErrors.map((e) => pending[e.index]!);
      }
    }
    const docs = await this.flow.find({ _id: { $in: asked.map((r) => r.id) } }).toArray();
    const byId = new Map(docs.map((doc) => [flowKeyOf(doc._id), doc]));
    return requests.map((r) => {
      if (r.tokens.length === 0) return { granted: [] };
      const doc = byId.get(flowKeyOf(r.id)) ?? null;
      const granted = grantedOf(doc, r.tokens, r.rules);
      return granted.length === r.tokens.length || !doc ? { granted } : { granted, hold: holdOf(doc, r.rules, now) };
    });
  }

  /**
   * Until when document `id` is held (`holdFlow`), if it is at `now`. Where there is only a hold to
   * respect, a read decides (a hold written just after it applies to the next claim).
   */
  async heldUntil(id: FlowId, now: Date): Promise<Date | undefined> {
    const doc = await this.flow.findOne({ _id: id }, { projection: { b: 1 } });
    return doc?.b instanceof Date && doc.b > now ? doc.b : undefined;
  }

  /** Hands back permits granted to runs that did not start (their jobs went to another claim). */
  async giveBack(id: FlowId, tokens: string[]): Promise<void> {
    if (tokens.length === 0) return;
    // A grant's entry of starts loses only these tokens (others of it may have started); an entry left empty goes.
    const startsKept = {
      $filter: {
        input: {
          $map: {
            input: '$s',
            in: {
              $let: {
                vars: { kept: { $filter: { input: '$$this.t', as: 'token', cond: { $not: [{ $in: ['$$token', tokens] }] } } } },
                in: { t: '$$kept', c: { $size: '$$kept' }, a: '$$this.a' },
              },
            },
          },
        },
        cond: { $gt: ['$$this.c', 0] },
      },
    };
    const slotsKept = { $filter: { input: '$h', cond: { $not: [{ $in: ['$$this.t', tokens] }] } } };
    await this.flow.updateOne({ _id: id }, [
      { $set: { h: { $cond: [{ $isArray: '$h' }, slotsKept, '$$REMOVE'] }, s: { $cond: [{ $isArray: '$s' }, startsKept, '$$REMOVE'] } } },
      { $unset: 'f' },
    ]);
  }

  /**
   * The keys of `name` (group keys `g`, or rate-limit keys `r`) whose documents are full until
   * after `now`, and until when: a claim leaves them out of its reads and reports them held. One
   * read of a small index range. With `nameHold`, the same read also fetches the name's own
   * document by `_id` (a second branch of an `$or`, on the `_id` index) and tells until when the
   * name is held ({@link heldUntil}), where a name that counts nothing itself has only a hold to respect.
   */
  async fullKeys(name: string, kind: 'g' | 'r', now: Date, nameHold = false): Promise<{ keys: { key: string; until: Date }[]; heldUntil?: Date }> {
    const full = { '_id.n': name, f: { $gt: now } };
    const docs = nameHold
      ? await this.flow.find({ $or: [full, { _id: flowId(name) }] }, { projection: { _id: 1, f: 1, b: 1 } }).toArray()
      : await this.flow.find(full, { projection: { _id: 1, f: 1 }, hint: FLOW_FULL_INDEX }).toArray();
    const keys = docs.flatMap((doc) => (doc._id[kind] === undefined || !(doc.f instanceof Date && doc.f > now) ? [] : [{ key: doc._id[kind]!, until: doc.f }]));
    const own = nameHold ? docs.find((doc) => doc._id.g === undefined && doc._id.r === undefined) : undefined;
    return own?.b instanceof Date && own.b > now ? { keys, heldUntil: own.b } : { keys };
  }

  /** The job leased with `token` holds a slot in document `id` (limit `concurrency`): remember it for its heartbeats and release. */
  holding(token: string, id: FlowId, concurrency: number): void {
    const slots = this.#held.get(token);
    if (slots) slots.push({ id, concurrency });
    else this.#held.set(token, [{ id, concurrency }]);
  }

  /**
   * A heartbeat of the lease `token` moved it to `until`: its slots move with it. A slot pruned
   * meanwhile (the lease had expired before this beat) is taken again if there is room; if there is
   * none, another run has it, which is logged (the run goes on: its lease is still valid).
   */
  async extend(token: string, until: Date, now: Date, jobId: string): Promise<void> {
    const slots = this.#held.get(token);
    if (!slots) return;
    for (const slot of slots) {
      const res = await this.flow.updateOne({ _id: slot.id, 'h.t': token }, { $set: { 'h.$.u': until } });
      if (res.matchedCount === 1) continue;
      const rules: PermitRules = { concurrency: slot.concurrency, concurrencyKind: slot.id.g === undefined ? 'globalConcurrency' : 'group' };
      const { granted } = await this.acquire(slot.id, [token], rules, now, until);
      if (granted.length === 0) {
        this.logger.warn(
          { jobId, flow: slot.id },
          'a running job lost its concurrency slot (its lease had expired before this heartbeat) and no slot is free: it runs over the limit until it ends',
        );
      }
    }
  }

  /**
   * {@link extend} for the leases of one batch of heartbeats: one bulk write moves every slot they
   * hold. When one did not match (its slot was pruned), each lease takes {@link extend}'s path,
   * which retakes what it can (setting a slot's end again to the same value changes nothing).
   */
  async extendMany(leases: { token: string; jobId: string; until: Date }[], now: Date): Promise<void> {
    const slots = leases.flatMap((lease) => (this.#held.get(lease.token) ?? []).map((slot) => ({ lease, slot })));
    if (slots.length === 0) return;
    const res = await this.flow.bulkWrite(
      slots.map(({ lease, slot }) => ({ updateOne: { filter: { _id: slot.id, 'h.t': lease.token }, update: { $set: { 'h.$.u': lease.until } } } })),
      { ordered: false },
    );
    if (res.matchedCount === slots.length) return;
    for (const lease of new Set(slots.map((s) => s.lease))) await this.extend(lease.token, lease.until, now, lease.jobId);
  }

  /**
   * The run of lease `token` ended (or went back to the queue): its slots are freed. Inside a
   * transaction the slots are freed once the session ends, if the job no longer runs under this
   * token by then (a transaction that aborted leaves the run going). A failure to free is logged:
   * the slot then ends with the lease.
   */
  async release(token: string, jobId: string, session?: ClientSession, stillRunning?: () => Promise<boolean>): Promise<void> {
    if (!this.#held.has(token)) return;
    if (session) {
      session.once('ended', () => {
        void (async () => {
          if (stillRunning && (await stillRunning())) return;
          await this.free([{ token, jobId }]);
        })().catch((err: unknown) =>
          this.logger.warn({ err, jobId }, 'could not free the concurrency slot of a job completed in a transaction; it frees when its lease ends'),
        );
      });
      return;
    }
    await this.free([{ token, jobId }]);
  }

  /**
   * {@link release} of the runs of one completion batch, outside a transaction: every slot they
   * hold is freed by one write, however many runs and flow documents.
   */
  async releaseMany(leases: { token: string; jobId: string }[]): Promise<void> {
    const ending = leases.filter((lease) => this.#held.has(lease.token));
    if (ending.length > 0) await this.free(ending);
  }

  /** The lease `token` was lost: its slots (already expired) are no longer this store's to free or extend. */
  forget(token: string): void {
    this.#held.delete(token);
  }

  /** Frees the slots of runs that ended: one write for all of them (a token is only ever in its own slots). */
  private async free(leases: { token: string; jobId: string }[]): Promise<void> {
    const ids = new Map<string, FlowId>();
    for (const { token } of leases) {
      for (const slot of this.#held.get(token) ?? []) ids.set(flowKeyOf(slot.id), slot.id);
      this.#held.delete(token);
    }
    if (ids.size === 0) return;
    const tokens = leases.map((lease) => lease.token);
    try {
      await this.flow.updateMany({ _id: { $in: [...ids.values()] } }, { $pull: { h: { t: { $in: tokens } } }, $unset: { f: '' } });
    } catch (err) {
      const ended = leases.length === 1 ? { jobId: leases[0]!.jobId } : { jobIds: leases.map((lease) => lease.jobId) };
      this.logger.warn({ err, ...ended }, "could not free the concurrency slots of finished jobs; each frees when its job's lease ends");
    }
  }

  /**
   * What holds back each due `queued` job of a page, as far as the flow documents tell (a paused
   * queue first). One read of the documents of the page's names and keys.
   */
  async heldBy(
    docs: Pick<JobDocument, 'name' | 'queue' | 'status' | 'runAt' | 'groupKey' | 'rateLimitKey'>[],
    now: Date,
    paused: () => Promise<string[]>,
  ): Promise<(FlowHeldBy | undefined)[]> {
    const due = docs.map((doc) => doc.status === 'queued' && doc.runAt.getTime() <= now.getTime());
    if (!due.includes(true)) return docs.map(() => undefined);
    const ids = new Map<string, FlowId>();
    const add = (id: FlowId): void => void ids.set(JSON.stringify([id.n, id.g ?? null, id.r ?? null]), id);
    docs.forEach((doc, i) => {
      if (!due[i]) return;
      add(flowId(doc.name));
      if (doc.groupKey !== undefined) add(flowId(doc.name, { group: doc.groupKey }));
      if (doc.rateLimitKey !== undefined) add(flowId(doc.name, { rate: doc.rateLimitKey }));
    });
    const [pausedQueues, found] = await Promise.all([paused(), this.flow.find({ _id: { $in: [...ids.values()] } }).toArray()]);
    const byId = new Map(found.map((doc) => [JSON.stringify([doc._id.n, doc._id.g ?? null, doc._id.r ?? null]), doc]));
    const get = (id: FlowId): FlowDocument | undefined => byId.get(JSON.stringify([id.n, id.g ?? null, id.r ?? null]));
    const full = (doc: FlowDocument | undefined): 'rate' | 'concurrency' | undefined => {
      if (!doc) return undefined;
      if (doc.b instanceof Date && doc.b > now) return 'rate';
      const { c, r, p } = doc.l ?? {};
      if (r !== undefined && p !== undefined && startsIn(liveIn(doc.s, now, p)) >= r) return 'rate';
      if (c !== undefined && (doc.h ?? []).filter((h) => h.u >= now).length >= c) return 'concurrency';
      return undefined;
    };
    return docs.map((doc, i) => {
      if (!due[i]) return undefined;
      if (pausedQueues.includes(doc.queue)) return 'paused';
      const byName = full(get(flowId(doc.name)));
      if (byName) return byName === 'rate' ? 'rateLimit' : 'globalConcurrency';
      if (doc.rateLimitKey !== undefined && full(get(flowId(doc.name, { rate: doc.rateLimitKey }))) === 'rate') return 'rateLimit';
      if (doc.groupKey !== undefined && full(get(flowId(doc.name, { group: doc.groupKey }))) === 'concurrency') return 'group';
      return undefined;
    });
  }

  /** Holds a name or key until `until` (a later hold wins). */
  async hold(req: FlowHoldRecord): Promise<void> {
    const name = requireString(req.name, 'holdFlow name');
    const key = req.key === undefined ? undefined : requireString(req.key, 'holdFlow key');
    const until = requireDate(req.until, 'holdFlow until');
    const _id = flowId(name, key === undefined ? undefined : { rate: key });
    for (let round = 0; ; round++) {
      try {
        await this.flow.updateOne({ _id }, { $max: { b: until, f: until } }, { upsert: true });
        return;
      } catch (err) {
        if (!isDuplicateKey(err) || round + 1 >= MAX_UPSERT_ROUNDS) throw err;
      }
    }
  }

  /**
   * The known limits and their use at `now` (see `JobStore.flowUsage`): one read of the flow
   * documents, in `_id` order (names with many keys in use are cut at {@link MAX_FLOW_USAGE} documents).
   */
  async usage(now: Date): Promise<FlowUsage[]> {
    requireDate(now, 'flowUsage now');
    const docs = await this.flow.find({}, { sort: { _id: 1 }, limit: 4 * MAX_FLOW_USAGE }).toArray();
    const out: FlowUsage[] = [];
    for (const doc of docs) {
      const { n: name, g: group, r: rateKey } = doc._id;
      const { c, r, p } = doc.l ?? {};
      const heldUntil = doc.b instanceof Date && doc.b > now ? { heldUntil: doc.b } : {};
      const running = (doc.h ?? []).filter((h) => h.u >= now).length;
      const starts = r !== undefined && p !== undefined ? startsIn(liveIn(doc.s, now, p)) : 0;
      if (group !== undefined) {
        if (c !== undefined && running > 0) out.push({ name, key: group, kind: 'group', limit: c, used: running });
      } else if (rateKey !== undefined) {
        if (starts > 0 || heldUntil.heldUntil) {
          out.push({
            name,
            key: rateKey,
            kind: 'rateLimit',
            ...(r !== undefined && p !== undefined ? { limit: r, perMs: p } : {}),
            used: starts,
            ...heldUntil,
          });
        }
      } else {
        if (c !== undefined) out.push({ name, kind: 'globalConcurrency', limit: c, used: running });
        if (r !== undefined && p !== undefined) out.push({ name, kind: 'rateLimit', limit: r, perMs: p, used: starts, ...heldUntil });
        else if (heldUntil.heldUntil) out.push({ name, kind: 'rateLimit', used: 0, ...heldUntil });
      }
    }
    return out.sort(compareFlowUsage).slice(0, MAX_FLOW_USAGE);
  }

  /** The holds in force at `now`. */
  async holds(now: Date): Promise<FlowHoldRecord[]> {
    const docs = await this.flow.find({ b: { $gt: requireDate(now, 'now') } }, { projection: { _id: 1, b: 1 } }).toArray();
    return docs.map((doc) => (doc._id.r === undefined ? { name: doc._id.n, until: doc.b! } : { name: doc._id.n, key: doc._id.r, until: doc.b! }));
  }
}
