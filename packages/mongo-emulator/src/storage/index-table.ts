/**
 * The sorted structure behind one index: a B+ tree of (key, record id) entries in index order,
 * so equality-prefix + range scans and sorts in index order cost O(log n + k).
 */
import * as btreeModule from 'sorted-btree';

type BTree<K, V> = import('sorted-btree').default<K, V>;
type BTreeConstructor = new <K, V>(entries: [K, V][] | undefined, compare: (a: K, b: K) => number, maxNodeSize?: number) => BTree<K, V>;
import { compareBson, HIGHEST, LOWEST, valueKey } from '../bson-order.js';
import { extractKeys, type ExtractedKeys, type IndexSpec } from './index-spec.js';
import type { Doc } from '../values.js';

// sorted-btree is CommonJS with `exports.default`; Node's ESM interop nests it one level deeper.
const moduleValue = btreeModule as unknown as { default: unknown };
const BTreeClass = ((moduleValue.default as { default?: unknown }).default ?? moduleValue.default) as BTreeConstructor;

const MAX_STEPS_BEFORE_SEEK = 16;
/** An out-of-bounds entry to step over without seeking. */
const SKIP = Symbol('skip');

export interface IndexEntry {
  key: unknown[];
  rid: number;
}

/** Per-field inclusive value bounds, in value order (lo <= hi). */
export interface FieldBounds {
  lo: unknown;
  hi: unknown;
}

export class IndexTable {
  readonly spec: IndexSpec;
  /** Set once any document put an array on an indexed path; such an index cannot give sort order. */
  multikey = false;
  /** Entries scans have visited so far (explain's totalKeysExamined is the difference over a query). */
  keysExamined = 0;
  private readonly tree: BTree<IndexEntry, undefined>;
  private readonly dirs: (1 | -1)[];

  /** Its key pattern's identity, for hints by key pattern. */
  readonly keyPatternId: string;
  /**
   * Every document path its keys depend on (its fields and its partial filter's fields), or
   * undefined when the partial filter is not a plain list of fields: an update that changes none of
   * them leaves its keys alone.
   */
  readonly paths: string[] | undefined;

  constructor(spec: IndexSpec) {
    this.spec = spec;
    this.keyPatternId = valueKey(spec.description.key);
    const partial = spec.partialFilterExpression ? Object.keys(spec.partialFilterExpression) : [];
    this.paths = partial.some((k) => k.startsWith('$')) ? undefined : [...spec.fields, ...partial];
    this.dirs = spec.directions;
    this.tree = new BTreeClass<IndexEntry, undefined>(undefined, (a: IndexEntry, b: IndexEntry) => this.compareEntries(a, b), 64);
  }

  private compareEntries(a: IndexEntry, b: IndexEntry): number {
    const c = this.compareKeys(a.key, b.key);
    if (c !== 0) return c;
    return a.rid < b.rid ? -1 : a.rid > b.rid ? 1 : 0;
  }

  /** Compares keys in index order (each field's direction applied). */
  compareKeys(a: unknown[], b: unknown[], fields = this.dirs.length): number {
    for (let i = 0; i < fields; i++) {
      const c = compareBson(a[i], b[i]);
      if (c !== 0) return c * this.dirs[i];
    }
    return 0;
  }

  get size(): number {
    return this.tree.size;
  }

  keysOf(doc: Doc): unknown[][] {
    return extractKeys(this.spec, doc).keys;
  }

  add(doc: Doc, rid: number): void {
    this.addKeys(extractKeys(this.spec, doc), rid);
  }

  addKeys({ keys, multikey }: ExtractedKeys, rid: number): void {
    if (multikey) this.multikey = true;
    for (const key of keys) this.tree.set({ key, rid }, undefined);
  }

  remove(doc: Doc, rid: number): void {
    this.removeKeys(this.keysOf(doc), rid);
  }

  removeKeys(keys: unknown[][], rid: number): void {
    for (const key of keys) this.tree.delete({ key, rid });
  }

  /** Whether changing these document paths can change this index's keys. */
  dependsOn(changed: readonly string[]): boolean {
    if (!this.paths) return true;
    return this.paths.some((p) => changed.some((c) => c === p || c.startsWith(p + '.') || p.startsWith(c + '.')));
  }

  extract(doc: Doc): ExtractedKeys {
    return extractKeys(this.spec, doc);
  }

  sameKeys(a: unknown[][], b: unknown[][]): boolean {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (this.compareKeys(a[i], b[i]) !== 0) return false;
    return true;
  }

  /** Record ids holding exactly this key. */
  ridsWithKey(key: unknown[]): number[] {
    const out: number[] = [];
    for (const [entry] of this.tree.entries({ key, rid: -Infinity }, [])) {
      if (this.compareKeys(entry.key, key) !== 0) break;
      out.push(entry.rid);
    }
    return out;
  }

  /**
   * Entries whose key lies within per-field bounds, in index order (or reversed). Fields after
   * the first non-point bound are checked entry by entry, so the scan still skips documents.
   */
  *scan(bounds: FieldBounds[], reverse: boolean): Generator<IndexEntry> {
    const start: unknown[] = [];
    const end: unknown[] = [];
    let prefixOpen = false;
    for (let i = 0; i < this.dirs.length; i++) {
      const b = bounds[i] ?? { lo: LOWEST, hi: HIGHEST };
      const first = this.dirs[i] === 1 ? b.lo : b.hi;
      const last = this.dirs[i] === 1 ? b.hi : b.lo;
      if (prefixOpen) {
        start.push(this.dirs[i] === 1 ? LOWEST : HIGHEST);
        end.push(this.dirs[i] === 1 ? HIGHEST : LOWEST);
      } else {
        start.push(first);
        end.push(last);
        if (compareBson(b.lo, b.hi) !== 0) prefixOpen = true;
      }
    }
    const step = reverse ? -1 : 1;
    // Index-order extremes for a field, in scan direction.
    const first = (i: number) => (this.dirs[i] * step === 1 ? LOWEST : HIGHEST);
    const last = (i: number) => (this.dirs[i] * step === 1 ? HIGHEST : LOWEST);
    /**
     * Where to continue after an out-of-bounds entry (mongod's index bounds checker): before a
     * field's interval, jump to its start; past it, jump past every key sharing the prefix.
     */
    // Leading point fields hold for every key between start and end: no need to check them.
    let fixed = 0;
    while (fixed < bounds.length && bounds[fixed] && compareBson(bounds[fixed].lo, bounds[fixed].hi) === 0) fixed++;
    // Past a unique field (or at the last one) every key differs: a seek would skip nothing.
    const idAt = this.spec.fields.indexOf('_id');
    const seekUseless = (i: number) => i === this.dirs.length - 1 || (idAt >= 0 && idAt < i);
    const seekFor = (key: unknown[]): IndexEntry | typeof SKIP | undefined => {
      for (let i = fixed; i < bounds.length; i++) {
        const b = bounds[i];
        if (!b) continue;
        const dirEff = this.dirs[i] * step;
        const from = dirEff === 1 ? b.lo : b.hi;
        const to = dirEff === 1 ? b.hi : b.lo;
        const before = compareBson(key[i], from) * dirEff < 0;
        if ((before || compareBson(key[i], to) * dirEff > 0) && seekUseless(i)) return SKIP;
        if (before) {
          const seek = [...key.slice(0, i), from];
          for (let j = i + 1; j < this.dirs.length; j++) seek.push(first(j));
          return { key: seek, rid: reverse ? Infinity : -Infinity };
        }
        if (compareBson(key[i], to) * dirEff > 0) {
          const seek = [...key.slice(0, i), last(i)];
          for (let j = i + 1; j < this.dirs.length; j++) seek.push(last(j));
          return { key: seek, rid: reverse ? -Infinity : Infinity };
        }
      }
      return undefined;
    };
    // Trailing fields where the far end is the index's extreme cannot end the walk: compare only
    // the fields before them (usually just the equality prefix).
    const far = reverse ? start : end;
    let endFields = this.dirs.length;
    while (endFields > 0 && far[endFields - 1] === last(endFields - 1)) endFields--;
    let from: IndexEntry = reverse ? { key: end, rid: Infinity } : { key: start, rid: -Infinity };
    restart: for (;;) {
      // One reused pair array per walk: a fresh pair per step was most of the scan's garbage.
      const pair: (IndexEntry | undefined)[] = [];
      const entries = reverse ? this.tree.entriesReversed(from, pair) : this.tree.entries(from, pair);
      // A seek is a tree descent; stepping is cheaper when the target is only a few entries on.
      let target: IndexEntry | undefined;
      let steps = 0;
      for (const [entry] of entries) {
        this.keysExamined++;
        if (!reverse && this.compareKeys(entry.key, end, endFields) > 0) return;
        if (reverse && this.compareKeys(entry.key, start, endFields) < 0) return;
        if (target) {
          if (this.compareEntries(entry, target) * step < 0) {
            if (++steps > MAX_STEPS_BEFORE_SEEK) {
              from = target;
              continue restart;
            }
            continue;
          }
          target = undefined;
        }
        const next = seekFor(entry.key);
        if (next === undefined) yield entry;
        target = next === SKIP ? undefined : next;
        steps = 0;
      }
      return;
    }
  }

  /** A stable identity for a key, for uniqueness bookkeeping. */
  static keyId(key: unknown[]): string {
    return valueKey(key);
  }
}
