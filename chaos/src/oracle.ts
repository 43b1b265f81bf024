import type { TxEffectRow } from './chaos-job.js';
import type { LedgerEntry } from './ledger.js';

/** What the oracle looks at, read from the database and the worker ledgers after a run. */
export interface OracleInput {
  /** The idempotency keys the controller enqueued (one job each). */
  keys: readonly string[];
  /**
   * Keys whose jobs have no transactional effect (a soak's plain jobs, workflows and their
   * children): completed exactly once is all they must be. Every other key needs its effect.
   */
  untransactional?: ReadonlySet<string>;
  /** Every job document (also any left in a non-terminal state). */
  jobs: readonly { id: string; key?: string; status: string; attempt: number }[];
  /** Ids of the jobs in the dead-letter collection. */
  deadLetterIds: readonly string[];
  /** The effects log: one row per handler run that got that far, written outside any transaction. */
  effects: readonly { key: string; jobId: string; attempt: number }[];
  /** The transactional effect's rows (no unique index: a key may have several). */
  txEffects: readonly Pick<TxEffectRow, 'key' | 'n' | 'runs'>[];
  ledger: readonly LedgerEntry[];
}

export interface OracleVerdict {
  jobs: number;
  /** Keys without exactly one job that completed (and is not also dead) with its transactional effect. */
  lost: number;
  /**
   * Effects-log rows of runs whose completion was accepted (in the ledgers), beyond one per job: a
   * job whose effect counted twice, by two accepted runs or by one run's handler called twice.
   */
  duplicateEffects: number;
  /** Increments of the transactional counter beyond one per key, over all its rows. */
  txEffectDuplicates: number;
  /** Jobs whose accepted completion came from a run whose lease had been taken over. */
  staleAcks: number;
  /** Extra handler runs: a key with n > 1 effect-log rows counts n - 1 (expected under faults). */
  reexecutions: number;
  /** Completion attempts the store refused because the lease was gone (the fence at work). */
  staleAcksRefused: number;
  /** A few examples per violation, for the report. */
  examples: string[];
}

function countBy(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

/**
 * Checks a chaos run: every job in exactly one terminal state (completed, and not also dead) with
 * its transactional effect; that effect counted once per key; no effect of an accepted run
 * counted twice; and no stale completion accepted. A completion is stale when its lease had been
 * taken over before the ack was applied, seen two ways: in the ledgers (the accepted ack's claim
 * is not the job's last claim, or two acks were accepted) and in the database (the run that
 * committed the transactional effect is not the job's last attempt).
 */
export function judge(input: OracleInput): OracleVerdict {
  const examples: string[] = [];
  const note = (what: string) => {
    if (examples.length < 20) examples.push(what);
  };
  const jobsByKey = new Map<string, OracleInput['jobs'][number][]>();
  for (const job of input.jobs) {
    if (job.key === undefined) continue;
    jobsByKey.set(job.key, [...(jobsByKey.get(job.key) ?? []), job]);
  }
  const dead = new Set(input.deadLetterIds);
  const increments = new Map<string, number>();
  const txRows = new Map<string, number>();
  for (const row of input.txEffects) {
    increments.set(row.key, (increments.get(row.key) ?? 0) + row.n);
    txRows.set(row.key, (txRows.get(row.key) ?? 0) + 1);
  }

  let lost = 0;
  for (const key of input.keys) {
    const jobs = jobsByKey.get(key) ?? [];
    const effectOk = input.untransactional?.has(key) === true || (increments.get(key) ?? 0) >= 1;
    const ok = jobs.length === 1 && jobs[0].status === 'completed' && !dead.has(jobs[0].id) && effectOk;
    if (!ok) {
      lost++;
      note(
        `lost ${key}: jobs=${JSON.stringify(jobs.map((j) => [j.id, j.status]))} dead=${jobs.some((j) => dead.has(j.id))} tx_effect=${increments.get(key) ?? 0}`,
      );
    }
  }

  let txEffectDuplicates = 0;
  for (const [key, n] of increments) {
    if (n > 1) {
      txEffectDuplicates += n - 1;
      note(`transactional effect ${key} counted ${n} times in ${txRows.get(key)} row(s)`);
    }
  }
  const runsPerKey = countBy(input.effects.map((e) => e.key));
  let reexecutions = 0;
  for (const n of runsPerKey.values()) reexecutions += Math.max(0, n - 1);

  // Claims are ordered by attempt (each claim adds one), not by when they were logged: a worker
  // paused between its claim and the ledger line logs it late.
  const claims = new Map<string, Extract<LedgerEntry, { t: 'claim' }>[]>();
  const acks: Extract<LedgerEntry, { t: 'ack' }>[] = [];
  for (const e of input.ledger) {
    if (e.t === 'claim') claims.set(e.job, [...(claims.get(e.job) ?? []), e]);
    else if (e.t === 'ack') acks.push(e);
  }
  const lastAttempt = new Map<string, number>();
  for (const [job, list] of claims) lastAttempt.set(job, Math.max(...list.map((c) => c.attempt)));

  // The runs whose completion was accepted, as job -> attempts (a run is its job's claim number).
  const acceptedRuns = new Map<string, Set<number>>();
  for (const a of acks) {
    const attempt = a.ok ? claims.get(a.job)?.find((c) => c.token === a.token)?.attempt : undefined;
    if (attempt !== undefined) acceptedRuns.set(a.job, (acceptedRuns.get(a.job) ?? new Set()).add(attempt));
  }
  let duplicateEffects = 0;
  const acceptedEffects = countBy(input.effects.filter((e) => acceptedRuns.get(e.jobId)?.has(e.attempt)).map((e) => e.jobId));
  for (const [job, n] of acceptedEffects) {
    if (n > 1) {
      duplicateEffects += n - 1;
      note(`duplicate effect ${job}: ${n} effects-log rows of runs whose completion was accepted (attempts ${[...(acceptedRuns.get(job) ?? [])].join(', ')})`);
    }
  }

  const stale = new Set<string>();
  const accepted = countBy(acks.filter((a) => a.ok).map((a) => a.job));
  for (const [job, n] of accepted) {
    if (n > 1) {
      stale.add(job);
      note(`stale ack ${job}: ${n} completions accepted`);
    }
  }
  // A completed job cannot be claimed again, so a claim with a higher attempt than the accepted
  // ack's own claim happened before that ack was applied: the ack's lease had been taken over.
  for (const ack of acks) {
    if (!ack.ok) continue;
    const own = claims.get(ack.job)?.find((c) => c.token === ack.token);
    const last = lastAttempt.get(ack.job) ?? 0;
    if (own && own.attempt < last) {
      stale.add(ack.job);
      note(`stale ack ${ack.job}: ${ack.owner} acked attempt ${own.attempt} after attempt ${last} had claimed it`);
    }
  }
  // The same in the database alone: the transactional effect names the run whose transaction
  // committed (with the completion); any later claim would have raised the job's attempt count.
  const jobById = new Map(input.jobs.map((j) => [j.id, j]));
  for (const row of input.txEffects) {
    for (const run of row.runs) {
      const job = jobById.get(run.jobId);
      if (job?.status === 'completed' && run.attempt !== job.attempt) {
        stale.add(job.id);
        note(`stale ack ${job.id}: its transaction committed for ${run.owner} attempt ${run.attempt}, but the job was claimed ${job.attempt} times`);
      }
    }
  }

  return {
    jobs: input.keys.length,
    lost,
    duplicateEffects,
    txEffectDuplicates,
    staleAcks: stale.size,
    reexecutions,
    staleAcksRefused: acks.filter((a) => !a.ok && a.code === 'LEASE_LOST').length,
    examples,
  };
}

/** The run's final line, exactly as `npm run chaos` prints it. */
export function finalLine(v: OracleVerdict, faults: { kills: number; pauses: number }): string {
  return `jobs=${v.jobs} kills=${faults.kills} pauses=${faults.pauses} lost=${v.lost} duplicate_effects=${v.duplicateEffects} tx_effect_duplicates=${v.txEffectDuplicates} stale_acks=${v.staleAcks} reexecutions=${v.reexecutions}`;
}

/** The run passed: nothing lost, nothing applied twice, no stale completion accepted. */
export function passed(v: OracleVerdict): boolean {
  return v.lost === 0 && v.duplicateEffects === 0 && v.txEffectDuplicates === 0 && v.staleAcks === 0;
}
