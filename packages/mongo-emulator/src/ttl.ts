/**
 * TTL expiry: documents whose indexed date plus expireAfterSeconds is at or before the
 * emulator clock's now are deleted (with change events), by a periodic unref'd timer or on
 * demand through `MongoEmulator.runTtlSweep()` for deterministic tests.
 */
import { TypeBound, TypeRank } from './bson-order.js';
import type { Engine } from './engine.js';
import { LockWait } from './errors.js';

export function sweepExpired(engine: Engine): number {
  const now = engine.clock.now().getTime();
  let removed = 0;
  for (const coll of engine.catalog.allCollections()) {
    for (const index of coll.indexes.values()) {
      const ttl = index.spec.expireAfterSeconds;
      if (ttl === undefined) continue;
      const cutoff = new Date(now - ttl * 1000);
      const rids = new Set<number>();
      for (const entry of index.scan([{ lo: new TypeBound(TypeRank.Date, -1), hi: cutoff }], false)) rids.add(entry.rid);
      const view = engine.view(coll.db, coll.name);
      for (const rid of rids) {
        const record = coll.records.get(rid);
        if (!record) continue;
        try {
          view.remove(record);
          removed++;
        } catch (err) {
          // A transaction holds the document: the next sweep gets it, as mongod's monitor would.
          if (!(err instanceof LockWait)) throw err;
        }
      }
    }
  }
  return removed;
}
