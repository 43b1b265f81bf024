import { describe, expect, it } from '@jest/globals';
import type { LedgerEntry } from '../../../chaos/src/ledger.js';
import { finalLine, judge, passed, type OracleInput } from '../../../chaos/src/oracle.js';
import { shardFigures, shardLine, shardsPassed, type NamespaceStats, type ShardStats } from '../../../chaos/src/shard-stats.js';

// The chaos oracle must catch what it claims to catch; a clean run proves nothing otherwise.
const claim = (job: string, token: string, owner: string, attempt: number, at: number): LedgerEntry => ({ t: 'claim', job, token, owner, attempt, at });
const ack = (job: string, token: string, owner: string, start: number, ok: boolean, code?: string): LedgerEntry => ({
  t: 'ack',
  job,
  token,
  owner,
  start,
  at: start + 1,
  ok,
  ...(code ? { code } : {}),
});

/** Two jobs; j1 was killed on w1 and re-run on w2; everything as it should be. */
function cleanRun(): OracleInput {
  return {
    keys: ['a', 'b'],
    jobs: [
      { id: 'j1', key: 'a', status: 'completed', attempt: 2 },
      { id: 'j2', key: 'b', status: 'completed', attempt: 1 },
    ],
    deadLetterIds: [],
    effects: [
      { key: 'a', jobId: 'j1', attempt: 1 },
      { key: 'a', jobId: 'j1', attempt: 2 },
      { key: 'b', jobId: 'j2', attempt: 1 },
    ],
    txEffects: [
      { key: 'a', n: 1, runs: [{ jobId: 'j1', attempt: 2, owner: 'w2' }] },
      { key: 'b', n: 1, runs: [{ jobId: 'j2', attempt: 1, owner: 'w1' }] },
    ],
    ledger: [
      claim('j1', 't1', 'w1', 1, 10),
      claim('j2', 't2', 'w1', 1, 11),
      ack('j2', 't2', 'w1', 20, true),
      claim('j1', 't3', 'w2', 2, 30),
      ack('j1', 't1', 'w1', 40, false, 'LEASE_LOST'),
      ack('j1', 't3', 'w2', 41, true),
    ],
  };
}

const acceptT1 = (r: OracleInput): OracleInput['ledger'] => r.ledger.map((e) => (e.t === 'ack' && e.token === 't1' ? { ...e, ok: true } : e));

describe('the chaos oracle', () => {
  it('passes a clean run and counts the re-execution and the refused stale ack', () => {
    const verdict = judge(cleanRun());
    expect(verdict).toMatchObject({ jobs: 2, lost: 0, duplicateEffects: 0, txEffectDuplicates: 0, staleAcks: 0, reexecutions: 1, staleAcksRefused: 1 });
    expect(passed(verdict)).toBe(true);
    expect(finalLine(verdict, { kills: 3, pauses: 1 })).toBe(
      'jobs=2 kills=3 pauses=1 lost=0 duplicate_effects=0 tx_effect_duplicates=0 stale_acks=0 reexecutions=1',
    );
  });

  it('does not mistake a claim logged late (its worker paused before writing the line) for a takeover', () => {
    const run = cleanRun();
    // w1's first claim of j1 is logged after w2's, as when w1 was SIGSTOPped right after claiming.
    const ledger = run.ledger.map((e) => (e.t === 'claim' && e.token === 't1' ? { ...e, at: 35 } : e));
    expect(judge({ ...run, ledger })).toMatchObject({ staleAcks: 0, lost: 0 });
  });

  it.each<[string, (run: OracleInput) => OracleInput, Partial<ReturnType<typeof judge>>]>([
    ['a job left running', (r) => ({ ...r, jobs: [{ ...r.jobs[0], status: 'running' }, r.jobs[1]] }), { lost: 1 }],
    ['a job never stored', (r) => ({ ...r, jobs: [r.jobs[1]] }), { lost: 1 }],
    ['a job both completed and in the dead letters', (r) => ({ ...r, deadLetterIds: ['j2'] }), { lost: 1 }],
    ['a completed job without its transactional effect', (r) => ({ ...r, txEffects: [r.txEffects[0]] }), { lost: 1 }],
    ['a transactional effect counted twice in one row', (r) => ({ ...r, txEffects: [r.txEffects[0], { ...r.txEffects[1], n: 2 }] }), { txEffectDuplicates: 1 }],
    [
      'a transactional effect in two rows of one key',
      (r) => ({ ...r, txEffects: [...r.txEffects, { key: 'b', n: 1, runs: [{ jobId: 'j2', attempt: 1, owner: 'w1' }] }] }),
      { txEffectDuplicates: 1 },
    ],
    [
      'one accepted run whose handler was called twice',
      (r) => ({ ...r, effects: [...r.effects, { key: 'b', jobId: 'j2', attempt: 1 }] }),
      { duplicateEffects: 1 },
    ],
    ['effects of two runs whose completions were both accepted', (r) => ({ ...r, ledger: acceptT1(r) }), { duplicateEffects: 1, staleAcks: 1 }],
    ['the stale worker ack accepted after the takeover', (r) => ({ ...r, ledger: acceptT1(r) }), { staleAcks: 1 }],
    [
      'the transaction of a run that was taken over committed',
      (r) => ({ ...r, txEffects: [{ key: 'a', n: 1, runs: [{ jobId: 'j1', attempt: 1, owner: 'w1' }] }, r.txEffects[1]] }),
      { staleAcks: 1 },
    ],
    [
      'an accepted ack whose lease a later claim had taken',
      (r) => ({ ...r, ledger: [...r.ledger.slice(0, 5), claim('j2', 't4', 'w2', 2, 15)] }),
      { staleAcks: 1 },
    ],
  ])('fails a run with %s', (_, corrupt, expected) => {
    const verdict = judge(corrupt(cleanRun()));
    expect(verdict).toMatchObject(expected);
    expect(passed(verdict)).toBe(false);
    expect(verdict.examples.length).toBeGreaterThan(0);
  });
});

describe("a sharded chaos run's routing figures", () => {
  const ns = (name: string, targeted: Record<string, number>, broadcast: Record<string, number> = {}): NamespaceStats => ({
    ns: name,
    sharded: name.endsWith('.loom_jobs'),
    targeted,
    broadcast,
    shards: { shard0: { targeted, broadcast }, shard1: { targeted: {}, broadcast } },
  });
  /** What `{ loomShardStats: 1 }` answers after a clean run: reads may reach every shard, writes reach one. */
  const clean = (): ShardStats => ({
    shards: ['shard0', 'shard1'],
    namespaces: [
      ns('chaos.loom_jobs', { insert: 10, findAndModify: 12, update: 20 }, { aggregate: 3, getMore: 2 }),
      ns('chaos.chaos_effects', { insert: 12 }),
      // Another database's broadcast write is not the run's.
      ns('other.loom_jobs', {}, { update: 5 }),
    ],
  });

  it("counts the run's writes by where they went, and passes when none reached two shards", () => {
    const figures = shardFigures(clean(), 'chaos', 8);
    expect(figures).toMatchObject({
      shards: 2,
      partitions: 8,
      writesTargeted: 54,
      writesBroadcast: 0,
      broadcastReads: { 'loom_jobs.aggregate': 3, 'loom_jobs.getMore': 2 },
    });
    expect(shardsPassed(figures)).toBe(true);
    expect(shardLine(figures)).toBe('shards=2 partitions=8 writes_targeted=54 writes_broadcast=0');
  });

  it('fails a run with a write that reached more than one shard', () => {
    const stats = clean();
    stats.namespaces[0]!.broadcast = { ...stats.namespaces[0]!.broadcast, update: 2 };
    const figures = shardFigures(stats, 'chaos', 8);
    expect(figures).toMatchObject({ writesBroadcast: 2, broadcastWrites: { 'loom_jobs.update': 2 } });
    expect(shardsPassed(figures)).toBe(false);
  });

  it('fails a run that counted no write at all (the counts were not read from the run)', () => {
    expect(shardsPassed(shardFigures(clean(), 'elsewhere', 8))).toBe(false);
  });
});
