/**
 * Runs a filter + sort over a collection view: candidates from the planner, each tested with
 * the full filter, then sorted only as far as the candidate order does not already provide.
 */
import type { CollectionView, Item } from '../views.js';
import type { Doc } from '../values.js';
import { compileFilter } from './filter.js';
import { sortComparator, type SortSpec } from './sort.js';

export interface MatchOptions {
  /** `let` variables for `$$name` in `$expr`. */
  variables?: Doc;
  /** An index name or key pattern the query must use. */
  hint?: unknown;
  /** Called for every document the plan fetches, before the filter tests it (explain's docs examined). */
  onCandidate?: () => void;
}

function* counted<T>(items: Iterable<T>, onItem: () => void): Generator<T> {
  for (const item of items) {
    onItem();
    yield item;
  }
}

export function* matchingItems(view: CollectionView, filter: Doc | undefined, sort: SortSpec, options: MatchOptions = {}): Generator<Item> {
  const matcher = compileFilter(filter, options.variables);
  const planned = view.candidates(filter ?? {}, sort, options.hint);
  const candidates = options.onCandidate ? { ...planned, items: counted(planned.items, options.onCandidate) } : planned;
  const fullCompare = sortComparator(sort);
  if (sort.length === 0 || candidates.sortedPrefix >= sort.length) {
    for (const item of candidates.items) if (matcher.test(item.doc)) yield item;
    return;
  }
  if (candidates.sortedPrefix === 0) {
    const all: Item[] = [];
    for (const item of candidates.items) if (matcher.test(item.doc)) all.push(item);
    all.sort((a, b) => fullCompare(a.doc, b.doc));
    yield* all;
    return;
  }
  // Candidates come grouped by the leading sort fields: sort each group on the rest.
  const prefixCompare = sortComparator(sort, candidates.sortedPrefix);
  let group: Item[] = [];
  for (const item of candidates.items) {
    if (!matcher.test(item.doc)) continue;
    if (group.length > 0 && prefixCompare(group[0].doc, item.doc) !== 0) {
      group.sort((a, b) => fullCompare(a.doc, b.doc));
      yield* group;
      group = [];
    }
    group.push(item);
  }
  group.sort((a, b) => fullCompare(a.doc, b.doc));
  yield* group;
}

/** The plan name the view would use (tests assert claims are index-backed). */
export function explainPlan(view: CollectionView, filter: Doc, sort: SortSpec): string {
  return view.candidates(filter, sort).plan;
}
