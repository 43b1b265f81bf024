/**
 * Aggregation stage names MongoDB 7.0 knows. A stage outside this list is mongod's error 40324
 * ("Unrecognized pipeline stage name"); a known stage the emulator does not run is refused with
 * NotImplemented (238), so the two cases stay distinguishable.
 */
import { CommandError } from '../errors.js';

const MONGODB_7_STAGES = new Set([
  '$addFields',
  '$bucket',
  '$bucketAuto',
  '$changeStream',
  '$changeStreamSplitLargeEvent',
  '$collStats',
  '$count',
  '$currentOp',
  '$densify',
  '$documents',
  '$facet',
  '$fill',
  '$geoNear',
  '$graphLookup',
  '$group',
  '$indexStats',
  '$limit',
  '$listLocalSessions',
  '$listSampledQueries',
  '$listSearchIndexes',
  '$listSessions',
  '$lookup',
  '$match',
  '$merge',
  '$out',
  '$planCacheStats',
  '$project',
  '$redact',
  '$replaceRoot',
  '$replaceWith',
  '$sample',
  '$search',
  '$searchMeta',
  '$set',
  '$setWindowFields',
  '$shardedDataDistribution',
  '$skip',
  '$sort',
  '$sortByCount',
  '$unionWith',
  '$unset',
  '$unwind',
  '$vectorSearch',
]);

/** Throws 40324 for a stage name MongoDB 7.0 does not have. */
export function assertKnownStage(name: string): void {
  if (!MONGODB_7_STAGES.has(name)) throw new CommandError('Location40324', `Unrecognized pipeline stage name: '${name}'`);
}
