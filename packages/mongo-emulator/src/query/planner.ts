/**
 * Chooses how to find candidate documents: index scans bounded by the filter's equality and
 * range predicates (merged across `$in` values and `$or` branches), or a collection scan. The
 * plan only narrows candidates: every candidate is still tested against the full filter, so a
 * plan can never change an answer, only its cost. It also reports how many leading sort fields
 * the candidate stream already satisfies, so a claim (equality prefix + range + sort in index
 * order + limit 1) stops after the first match instead of sorting the collection.
 */
import { compareBson, TypeBound, typeRank, valueKey } from '../bson-order.js';
import { isPlainObject, type Doc } from '../values.js';
import { CommandError } from '../errors.js';
import type { CollectionData, StoredRecord } from '../storage/collection.js';
import type { FieldBounds, IndexTable } from '../storage/index-table.js';
import { sortComparator, type SortSpec } from './sort.js';
import { impliesPartialFilter } from './implication.js';

export interface Candidates {
  items: Iterable<StoredRecord>;
  /** Leading sort fields the stream is already ordered by. */
  sortedPrefix: number;
  /** 'COLLSCAN' or the index names used, for explain-like diagnostics and tests. */
  plan: string;
}

/** Per-field constraint: a list of points, or one interval. */
type Constraint = { points: unknown[] } | { range: FieldBounds };

const MAX_SCANS = 200;

function isOperatorObject(v: unknown): v is Doc {
  return isPlainObject(v) && Object.keys(v).length > 0 && Object.keys(v).every((k) => k.startsWith('$'));
}

function pointable(v: unknown): boolean {
  return !Array.isArray(v) && !(v instanceof RegExp) && (v as { _bsontype?: string } | null)?._bsontype !== 'BSONRegExp' && v !== undefined;
}

function intersect(a: FieldBounds, b: FieldBounds): FieldBounds {
  return {
    lo: compareBson(a.lo, b.lo) >= 0 ? a.lo : b.lo,
    hi: compareBson(a.hi, b.hi) <= 0 ? a.hi : b.hi,
  };
}

/** What one field condition says about the field's value, if anything usable. */
function constraintFor(cond: unknown): Constraint | undefined {
  if (!isOperatorObject(cond)) return pointable(cond) ? { points: [cond] } : undefined;
  let range: FieldBounds | undefined;
  let points: unknown[] | undefined;
  for (const [op, v] of Object.entries(cond)) {
    let r: FieldBounds | undefined;
    switch (op) {
      case '$eq':
        if (pointable(v)) points = [v];
        break;
      case '$in':
        if (Array.isArray(v) && v.length > 0 && v.every(pointable)) points = v;
        break;
      case '$gt':
      case '$gte':
        if (pointable(v) && v !== null) r = { lo: v, hi: new TypeBound(typeRank(v), 1) };
        break;
      case '$lt':
      case '$lte':
        if (pointable(v) && v !== null) r = { lo: new TypeBound(typeRank(v), -1), hi: v };
        break;
      default:
        break;
    }
    if (r) range = range ? intersect(range, r) : r;
  }
  if (points) {
    const kept = range ? points.filter((p) => compareBson(p, range!.lo) >= 0 && compareBson(p, range!.hi) <= 0) : points;
    return { points: kept };
  }
  return range ? { range } : undefined;
}

/** The AND-ed field conditions of a filter (top level and nested `$and`), and its `$or`s. */
function conjunction(filter: Doc, out: Map<string, Constraint[]>, ors: Doc[][]): void {
  for (const [key, cond] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(cond)) {
      for (const sub of cond) if (isPlainObject(sub)) conjunction(sub, out, ors);
    } else if (key === '$or' && Array.isArray(cond)) {
      ors.push(cond.filter(isPlainObject));
    } else if (!key.startsWith('$')) {
      const c = constraintFor(cond);
      if (c) out.set(key, [...(out.get(key) ?? []), c]);
    }
  }
}

function combine(constraints: Constraint[]): Constraint {
  let result = constraints[0];
  for (const c of constraints.slice(1)) {
    if ('points' in result && 'points' in c) {
      const keys = new Set(c.points.map(valueKey));
      result = { points: result.points.filter((p) => keys.has(valueKey(p))) };
    } else if ('points' in result && 'range' in c) {
      result = { points: result.points.filter((p) => compareBson(p, c.range.lo) >= 0 && compareBson(p, c.range.hi) <= 0) };
    } else if ('range' in result && 'points' in c) {
      const r = result.range;
      result = { points: c.points.filter((p) => compareBson(p, r.lo) >= 0 && compareBson(p, r.hi) <= 0) };
    } else if ('range' in result && 'range' in c) {
      result = { range: intersect(result.range, c.range) };
    }
  }
  return result;
}

interface IndexPlan {
  index: IndexTable;
  scans: FieldBounds[][];
  reverse: boolean;
  sortedPrefix: number;
  score: number;
  /** The scans are narrowed by filter bounds (not a whole-index walk for sort order only). */
  bounded: boolean;
  /** How many index fields the filter bounds (higher: fewer candidates). */
  tightness: number;
  /** How narrow the key range walked is: only the leading bounded fields count (higher: fewer keys). */
  seekTightness: number;
}

/** A chosen access path: a fresh candidate stream per call. */
interface Chosen {
  open(): Iterator<StoredRecord>;
  sortedPrefix: number;
  name: string;
}

/** mongod-like trial: an unsorted but tighter plan wins if it finishes within this many keys. */
const TRIAL_RECORDS = 256;

/** A partial index is usable only when the query implies its filter. */
function partialSatisfied(index: IndexTable, filter: Doc): boolean {
  const partial = index.spec.partialFilterExpression;
  return !partial || impliesPartialFilter(filter, partial);
}

function planIndex(index: IndexTable, fields: Map<string, Constraint>, sort: SortSpec, filter: Doc, hinted = false): IndexPlan | undefined {
  const spec = index.spec;
  if (!hinted && (spec.sparse || spec.description.hidden)) return undefined;
  if (!partialSatisfied(index, filter)) {
    if (hinted) throw new CommandError('BadValue', 'hint provided does not correspond to an existing index');
    return undefined;
  }
  const perField: (Constraint | undefined)[] = spec.fields.map((f) => fields.get(f));
  if (index.multikey) {
    // Two range predicates on an array field may be met by different elements, so intersected
    // bounds could miss documents; only point bounds stay exact supersets.
    for (let i = 0; i < perField.length; i++) if (perField[i] && 'range' in perField[i]!) perField[i] = undefined;
  }
  let prefix = 0;
  let scans: FieldBounds[][] = [[]];
  let rangeUsed = false;
  for (let i = 0; i < perField.length; i++) {
    const c = perField[i];
    if (!c) break;
    if ('points' in c) {
      if (scans.length * c.points.length > MAX_SCANS) break;
      const next: FieldBounds[][] = [];
      for (const s of scans) for (const p of c.points) next.push([...s, { lo: p, hi: p }]);
      scans = next;
      prefix++;
    } else {
      for (const s of scans) s.push(c.range);
      rangeUsed = true;
      break;
    }
  }
  // Later fields still filter entries inside each scan (cheaper than fetching documents).
  for (const s of scans) {
    for (let i = s.length; i < perField.length; i++) {
      const c = perField[i];
      if (c && 'range' in c) s[i] = c.range;
      else if (c && 'points' in c && c.points.length === 1) s[i] = { lo: c.points[0], hi: c.points[0] };
    }
  }
  // A unique index with every field bound to points yields at most one document per scan (mongod's
  // IDHACK for `_id`): nothing is tighter, however many other fields another index bounds.
  const exact = spec.unique && !index.multikey && prefix === spec.fields.length;
  const seekTightness = exact ? Number.MAX_SAFE_INTEGER : prefix * 4 + (rangeUsed ? 2 : 0);
  const tightness = exact ? Number.MAX_SAFE_INTEGER : seekTightness + (scans[0] ?? []).filter((b, i) => b && i > prefix).length;
  // Sort order the scans provide.
  let sortedPrefix = 0;
  let reverse: boolean | undefined;
  if (!index.multikey) {
    let j = prefix;
    for (const { field, dir } of sort) {
      const at = spec.fields.indexOf(field);
      if (at >= 0 && at < prefix) {
        sortedPrefix++;
        continue;
      }
      if (j >= spec.fields.length || spec.fields[j] !== field) break;
      const wantReverse = spec.directions[j] !== dir;
      if (reverse !== undefined && reverse !== wantReverse) break;
      reverse = wantReverse;
      j++;
      sortedPrefix++;
    }
  }
  const score = prefix * 4 + (rangeUsed ? 2 : 0) + (sort.length > 0 && sortedPrefix === sort.length ? 5 : sortedPrefix);
  if (!hinted && prefix === 0 && !rangeUsed && sortedPrefix === 0) return undefined;
  return { index, scans, reverse: reverse ?? false, sortedPrefix, score, bounded: prefix > 0 || rangeUsed, tightness, seekTightness };
}

function fieldConstraints(filter: Doc): Map<string, Constraint> {
  const raw = new Map<string, Constraint[]>();
  conjunction(filter, raw, []);
  const fields = new Map<string, Constraint>();
  for (const [f, cs] of raw) fields.set(f, combine(cs));
  return fields;
}

function indexPlans(coll: CollectionData, filter: Doc, sort: SortSpec): IndexPlan[] {
  const fields = fieldConstraints(filter);
  const plans: IndexPlan[] = [];
  for (const index of coll.indexes.values()) {
    const plan = planIndex(index, fields, sort, filter);
    if (plan) plans.push(plan);
  }
  return plans;
}

function indexChoice(coll: CollectionData, plan: IndexPlan, sort: SortSpec): Chosen {
  return { open: () => streamsFor(coll, plan, sort, plan.sortedPrefix), sortedPrefix: plan.sortedPrefix, name: plan.index.spec.name };
}

/**
 * The best plan for a conjunction: the one giving the most sort order, unless a tighter
 * plan's candidates fit in a small trial, in which case those are fetched and sorted.
 */
type Planned = Chosen & Pick<IndexPlan, 'bounded' | 'tightness' | 'seekTightness'>;

function choosePlan(coll: CollectionData, filter: Doc, sort: SortSpec): Planned | undefined {
  const plans = indexPlans(coll, filter, sort);
  if (plans.length === 0) return undefined;
  const byScore = plans.reduce((a, b) => (b.score > a.score ? b : a));
  const byTightness = plans.reduce((a, b) => (b.tightness > a.tightness || (b.tightness === a.tightness && b.score > a.score) ? b : a));
  if (sort.length === 0 || byTightness === byScore || byTightness.tightness <= byScore.tightness) {
    const best = sort.length === 0 ? byTightness : byScore;
    return { ...indexChoice(coll, best, sort), bounded: best.bounded, tightness: best.tightness, seekTightness: best.seekTightness };
  }
  const trial: StoredRecord[] = [];
  const it = scanPlan(coll, byTightness, new Set());
  for (let r = it.next(); !r.done; r = it.next()) {
    trial.push(r.value);
    if (trial.length > TRIAL_RECORDS) {
      it.return(undefined);
      return { ...indexChoice(coll, byScore, sort), bounded: byScore.bounded, tightness: byScore.tightness, seekTightness: byScore.seekTightness };
    }
  }
  const compare = sortComparator(sort);
  trial.sort((a, b) => compare(a.doc, b.doc));
  return {
    open: () => trial[Symbol.iterator](),
    sortedPrefix: sort.length,
    name: `${byTightness.index.spec.name}+SORT`,
    bounded: true,
    tightness: byTightness.tightness,
    seekTightness: byTightness.seekTightness,
  };
}

function* scanPlan(coll: CollectionData, plan: IndexPlan, seen: Set<number>): Generator<StoredRecord> {
  for (const bounds of plan.scans) {
    for (const entry of plan.index.scan(bounds, plan.reverse)) {
      if (seen.has(entry.rid)) continue;
      seen.add(entry.rid);
      const record = coll.records.get(entry.rid);
      if (record) yield record;
    }
  }
}

/** k-way merge of streams each ordered by `compare`, dropping records already emitted. */
function* mergeStreams(streams: Iterator<StoredRecord>[], compare: (a: Doc, b: Doc) => number): Generator<StoredRecord> {
  const heads = streams.map((s) => s.next());
  const emitted = new Set<number>();
  for (;;) {
    let best = -1;
    for (let i = 0; i < heads.length; i++) {
      const h = heads[i];
      if (h.done) continue;
      if (best < 0 || compare(h.value.doc, (heads[best] as IteratorYieldResult<StoredRecord>).value.doc) < 0) best = i;
    }
    if (best < 0) return;
    const record = (heads[best] as IteratorYieldResult<StoredRecord>).value;
    heads[best] = streams[best].next();
    if (emitted.has(record.rid)) continue;
    emitted.add(record.rid);
    yield record;
  }
}

function scanAll(coll: CollectionData): Candidates {
  return { items: coll.records.values(), sortedPrefix: 0, plan: 'COLLSCAN' };
}

function streamsFor(coll: CollectionData, plan: IndexPlan, sort: SortSpec, sortedPrefix: number): Iterator<StoredRecord> {
  if (plan.scans.length <= 1 || sortedPrefix === 0) return scanPlan(coll, plan, new Set())[Symbol.iterator]();
  const compare = sortComparator(sort, sortedPrefix);
  const streams = plan.scans.map((bounds) => scanPlan(coll, { ...plan, scans: [bounds] }, new Set()));
  return mergeStreams(streams, compare);
}

/** The index a `hint` names (by name or key pattern); `$natural` means a collection scan. */
function hintedIndex(coll: CollectionData, hint: unknown): IndexTable | 'natural' {
  if (isPlainObject(hint) && '$natural' in hint) return 'natural';
  const pattern = isPlainObject(hint) ? valueKey(hint) : undefined;
  const found =
    typeof hint === 'string' ? coll.indexes.get(hint) : pattern !== undefined ? [...coll.indexes.values()].find((i) => i.keyPatternId === pattern) : undefined;
  if (!found) throw new CommandError('BadValue', 'hint provided does not correspond to an existing index');
  return found;
}

/**
 * A filter naming `_id` values (equality, `$eq` or `$in`) at its top level, unsorted: the unique `_id` index
 * yields at most one document per value, so no other plan can be tighter and none is weighed (the
 * other indexes' plans and partial-filter checks were a fifth of a fenced write's CPU with the
 * jobs collection's 14 indexes). mongod answers such a filter from `_id` too (IDHACK for a bare
 * `{ _id }`). Conditions besides `_id` are still tested on the candidate, as with every plan.
 */
function idPointsPlan(coll: CollectionData, filter: Doc, sort: SortSpec): Candidates | undefined {
  if (sort.length > 0 || !Object.hasOwn(filter, '_id')) return undefined;
  const index = coll.indexes.get('_id_');
  if (!index) return undefined;
  const constraint = constraintFor(filter._id);
  if (!constraint || !('points' in constraint)) return undefined;
  const plan = planIndex(index, new Map([['_id', constraint]]), sort, filter);
  if (!plan) return undefined;
  return indexCandidates(coll, plan, sort, index.spec.name);
}

/** The candidates of one index plan, streamed anew for each iteration. */
function indexCandidates(coll: CollectionData, plan: IndexPlan, sort: SortSpec, name: string): Candidates {
  return { items: { [Symbol.iterator]: () => streamsFor(coll, plan, sort, plan.sortedPrefix) }, sortedPrefix: plan.sortedPrefix, plan: name };
}

/**
 * Candidate records for `filter`, ordered by as many leading `sort` fields as an index allows.
 * A `hint` forces its index (as mongod does, `$or` branches then share it).
 */
export function planCandidates(coll: CollectionData, filter: Doc, sort: SortSpec, hint?: unknown): Candidates {
  if (hint !== undefined && hint !== null && !(typeof hint === 'string' && hint === '')) {
    const index = hintedIndex(coll, hint);
    if (index === 'natural') return scanAll(coll);
    const plan = planIndex(index, fieldConstraints(filter), sort, filter, true)!;
    return indexCandidates(coll, plan, sort, `${index.spec.name} (hinted)`);
  }
  const byId = idPointsPlan(coll, filter, sort);
  if (byId) return byId;
  const ors = Array.isArray(filter.$or) ? (filter.$or as unknown[]).filter(isPlainObject) : undefined;
  const direct = choosePlan(coll, filter, sort);
  if (ors && ors.length > 0) {
    // Plan each $or branch with the rest of the conjunction; use it only if every branch can, and
    // (when the rest alone is bounded) only if every branch is tighter than the rest alone. When the
    // rest alone streams in sort order, a branch must walk a narrower key range, not just check more
    // fields inside the same one: the sorted OR yields nothing until every branch found its first
    // document, while the rest alone stops at its first match, so mongod's trial picks the latter.
    // Agenda's lock query (name + $or of [unlocked and due, lock expired]) is the case: its
    // lock-expiry branch bounds only lockedAt, fourth in Agenda's index, so it walks every job of
    // the name, and mongod runs the query as IXSCAN on the name with the $or as the FETCH filter.
    const { $or: _ignored, ...rest } = filter;
    const branches = ors.map((branch) => choosePlan(coll, { $and: [rest, branch] }, sort));
    const streams = direct !== undefined && sort.length > 0 && direct.sortedPrefix >= sort.length;
    const narrower = (b: Planned | undefined) => b !== undefined && (streams ? b.seekTightness > direct.seekTightness : b.tightness > direct!.tightness);
    const tighter = !direct || !direct.bounded || branches.every(narrower);
    if (tighter && branches.every((b) => b !== undefined && b.bounded)) {
      const chosen = branches as Chosen[];
      const sortedPrefix = Math.min(...chosen.map((b) => b.sortedPrefix));
      const compare = sortedPrefix > 0 ? sortComparator(sort, sortedPrefix) : () => 0;
      return {
        items: {
          [Symbol.iterator]: () =>
            mergeStreams(
              chosen.map((b) => b.open()),
              compare,
            ),
        },
        sortedPrefix,
        plan: `OR(${chosen.map((b) => b.name).join(',')})`,
      };
    }
  }
  if (!direct) return scanAll(coll);
  return { items: { [Symbol.iterator]: () => direct.open() }, sortedPrefix: direct.sortedPrefix, plan: direct.name };
}
