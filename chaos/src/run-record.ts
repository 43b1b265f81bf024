import type { Db } from 'mongodb';
import { EFFECTS, TX_EFFECTS, type TxEffectRow } from './chaos-job.js';
import type { LedgerEntry } from './ledger.js';
import type { OracleInput } from './oracle.js';

/**
 * What a run left in `db` (jobs, dead letters, the effects log and the transactional effect), with
 * the workers' `ledger`, as the oracle reads it. `keys` are the keys that were enqueued.
 */
export async function readRunRecord(db: Db, keys: readonly string[], ledger: readonly LedgerEntry[]): Promise<OracleInput> {
  const jobs = await db
    .collection('loom_jobs')
    .find({}, { projection: { idempotencyKey: 1, status: 1, attempt: 1 } })
    .toArray();
  const deadLetters = await db
    .collection('loom_dead_letters')
    .find({}, { projection: { _id: 1 } })
    .toArray();
  const effects = await db
    .collection(EFFECTS)
    .find({}, { projection: { key: 1, jobId: 1, attempt: 1 } })
    .toArray();
  const txEffects = await db
    .collection<TxEffectRow>(TX_EFFECTS)
    .find({}, { projection: { _id: 0, key: 1, n: 1, runs: 1 } })
    .toArray();
  return {
    keys,
    jobs: jobs.map((j) => ({ id: j._id.toHexString(), key: j.idempotencyKey as string | undefined, status: j.status as string, attempt: j.attempt as number })),
    deadLetterIds: deadLetters.map((d) => String(d._id)),
    effects: effects.map((e) => ({ key: e.key as string, jobId: e.jobId as string, attempt: e.attempt as number })),
    txEffects,
    ledger,
  };
}
