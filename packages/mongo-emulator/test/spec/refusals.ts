/**
 * THE refusal table: everything MongoDB 7.0 does that the emulator deliberately does not, with
 * the error code it answers instead and why, plus the spec tests each refusal accounts for.
 * The spec runner requires every listed test to fail with that code (a refusal stays loud and
 * the table stays honest), and the emulator README's "Differences from MongoDB 7.0" section is
 * generated from this file (readme.test.ts checks it; `UPDATE_README=1` rewrites it).
 */
export interface Refusal {
  /** What MongoDB 7.0 does that the emulator does not. */
  feature: string;
  /** The error code the emulator answers with. */
  code: number;
  codeName: string;
  /** Why it is refused rather than implemented. */
  reason: string;
  /** The spec tests it accounts for: suite, file, and test descriptions (all tests of the file when omitted). */
  tests?: { suite: string; file: string; descriptions?: string[] }[];
}

const NOT_IMPLEMENTED = { code: 238, codeName: 'NotImplemented' } as const;

const collationTests = [
  'aggregate-collation',
  'bulkWrite-collation',
  'count-collation',
  'deleteMany-collation',
  'deleteOne-collation',
  'distinct-collation',
  'find-collation',
  'findOneAndDelete-collation',
  'findOneAndReplace-collation',
  'findOneAndUpdate-collation',
  'replaceOne-collation',
  'updateMany-collation',
  'updateOne-collation',
].map((file) => ({ suite: 'crud', file }));

export const REFUSALS: Refusal[] = [
  {
    feature: 'Collations other than the simple binary one (`collation` on queries, writes, aggregations, indexes)',
    ...NOT_IMPLEMENTED,
    reason: 'A collation changes every comparison: matching, sorting, index order and unique keys; emulating ICU collation in some places only would answer wrongly in the others.',
    tests: collationTests,
  },
  {
    feature: 'Views (`create` with `viewOn`/`pipeline`)',
    ...NOT_IMPLEMENTED,
    reason: 'A view is a stored pipeline every read must run through, with restrictions of its own; Loom uses none.',
    tests: [
      { suite: 'crud', file: 'estimatedDocumentCount', descriptions: ['estimatedDocumentCount works correctly on views'] },
      { suite: 'change-streams', file: 'change-streams-showExpandedEvents', descriptions: ['when showExpandedEvents is true, create events on views are reported'] },
    ],
  },
  {
    feature: 'Document validation (`validator`, `validationLevel`, `validationAction` on create and collMod)',
    ...NOT_IMPLEMENTED,
    reason: "Validation failures (121) carry mongod's detailed explanation of the failed rule, which the emulator would only approximate.",
    tests: [{ suite: 'crud', file: 'findOneAndUpdate-errorResponse', descriptions: ['findOneAndUpdate document validation errInfo is accessible'] }],
  },
  {
    feature: 'Capped and time series collections, clustered indexes, collection-level `expireAfterSeconds`, encrypted fields',
    ...NOT_IMPLEMENTED,
    reason: 'Storage layouts with their own insertion and deletion rules; Loom uses none.',
  },
  {
    feature: 'Text, geospatial, hashed and wildcard indexes; `$text`, `$near`, `$nearSphere`, `$geoWithin`, `$geoIntersects`, `$geoNear`',
    ...NOT_IMPLEMENTED,
    reason: 'Each needs its own index structure and scoring; an unindexed imitation would differ in results and errors.',
  },
  {
    feature: 'Server-side JavaScript: `$where`, `$function`, `$accumulator`',
    ...NOT_IMPLEMENTED,
    reason: 'Running user JavaScript is out of scope for a test server (and disabled on many deployments).',
  },
  {
    feature: '`$type` with `double`, `int`, `long` or `decimal`',
    ...NOT_IMPLEMENTED,
    reason: "Numbers are kept as JavaScript numbers (see below), so the stored BSON subtype is unknown; `$type: 'number'` works.",
  },
  {
    feature: 'Aggregation stages other than the ones listed under Implemented (e.g. `$collStats`, `$indexStats`, `$currentOp`, `$search`); `$out`/`$merge` inside `$lookup`, `$facet` or `$unionWith`; `aggregate: 1` without `$documents`, `$listLocalSessions` or `$changeStream`',
    ...NOT_IMPLEMENTED,
    reason: 'Diagnostic or Atlas-only stages; an unknown stage name is 40324 as on mongod.',
  },
  {
    feature: 'Tailable cursors, `returnKey`, `showRecordId`, `min`/`max`, `$natural` and `$meta` sorts, positional (`.$`) and `$meta` projections, `explain` of commands other than `find`, `findAndModify`, `aggregate`, `count` and `distinct`',
    ...NOT_IMPLEMENTED,
    reason: 'Features tied to mongod storage internals (record ids, capped collections, query plans).',
  },
  {
    feature: 'readConcern `atClusterTime`; write concern `w` as a tag-count document',
    ...NOT_IMPLEMENTED,
    reason: 'The emulator keeps no history to read at a past time, and a one-member set has no tags.',
  },
  {
    feature: 'Fail points other than `failCommand`, `onPrimaryTransactionalWrite` and `failGetMoreAfterCursorCheckout`',
    code: 266,
    codeName: 'FailPointSetFailed',
    reason: 'Only the fail points the drivers\u2019 test suites use are implemented.',
  },
];

/**
 * Behaviour that differs from MongoDB 7.0 without an error: approximations the emulator makes
 * knowingly (no spec test depends on them).
 */
export const APPROXIMATIONS: string[] = [
  'Numbers are kept as JavaScript numbers: a double 2.0 comes back as int32 2, an int64 that fits 53 bits comes back as a number.',
  "Sorting inside `$facet`, `$setWindowFields` and `$push`'s `$sort` uses mingo's order (differs from BSON order only across types).",
  "Positional `$` is resolved from the query's top-level (and `$and`) conditions on the array, not from inside `$or`.",
  "`explain`: `queryPlanner.winningPlan` is a simple stage tree (`COLLSCAN`, or `FETCH` over an `IXSCAN` or an `OR` of them, the emulator's plan name as `emulatorPlan`), without rejected plans; `executionStats`, of `find` and `findAndModify` only, has `nReturned`, `totalKeysExamined` and `totalDocsExamined` (documents the plan fetched before the filter tested them), not times or per-stage figures.",
  "`$out` replaces the target's documents in place (change streams see deletes and inserts), where mongod renames a temporary collection over it.",
  "A change event's `updateDescription` is computed by diffing the document before and after (arrays element by element), as mongod does for pipeline updates; for some operator updates mongod reports a whole array where the emulator reports the changed elements.",
  'Events of one transaction get consecutive cluster times instead of one shared time.',
  "A claim's cost grows with the index entries before the first claimable one (e.g. claimed but unfinished jobs ahead of it in `{queue, name, priority, runAt, _id, claimAt}`), as keys examined do on mongod, and every command costs far more CPU than on mongod: `bench/claim-throughput.mjs` measures the emulator's CPU per claim.",
];

export function findRefusal(suite: string, file: string, description: string): Refusal | undefined {
  return REFUSALS.find((r) => r.tests?.some((t) => t.suite === suite && t.file === file && (!t.descriptions || t.descriptions.includes(description))));
}

/** How many spec tests a refusal accounts for, per suite, for the README. */
function testCount(refusal: Refusal, countFile: (suite: string, file: string) => number): number {
  return (refusal.tests ?? []).reduce((n, t) => n + (t.descriptions?.length ?? countFile(t.suite, t.file)), 0);
}

/** The README section, generated from the tables above. */
export function differencesSection(countFile: (suite: string, file: string) => number): string {
  const rows = REFUSALS.map((r) => {
    const n = testCount(r, countFile);
    return `| ${r.feature} | ${r.code} ${r.codeName} | ${r.reason} | ${n > 0 ? n : '—'} |`;
  });
  return [
    '## Differences from MongoDB 7.0',
    '',
    '<!-- Generated from test/spec/refusals.ts by test/spec/readme.test.ts (UPDATE_README=1 rewrites it). -->',
    '',
    'Refused, loudly, with the error code shown (spec tests: how many of MongoDB\u2019s unified spec tests each refusal accounts for):',
    '',
    '| Feature | Answer | Why | Spec tests |',
    '|---|---|---|---|',
    ...rows,
    '',
    'Approximated:',
    '',
    ...APPROXIMATIONS.map((a) => `- ${a}`),
    '',
  ].join('\n');
}
