import { describe, expect, it } from '@jest/globals';
import type { LedgerEntry } from '../../../chaos/src/ledger.js';
import { finalLine, judge, passed, type OracleInput } from '../../../chaos/src/oracle.js';

// The chaos oracle must catch what it claims to catch; a clean run proves nothing otherwise.
const claim = (job: string, token: string, owner: string, attempt: number, at: number): LedgerEntry => ({ t: 'claim', job, token, owner, attempt, at });
const ack = (job: string, token: string, owner: string, start: number, ok: boolean, code?: string): LedgerEntry => ({
  t: 'ack', job, token, owner, start, at: start + 1, ok, ...(code ? { code } : {}),
});

/** Two jobs; j1 was killed on w1 and re-run on w2; everything as it should be. */
function cleanRun(): OracleInput {
  return {
    keys: ['a', 'b'],
    jobs: [
      { id: 'j1', key: 'a', status: 'completed', attempt: 2, result: { owner: 'w2', attempt: 2 } },
      { id: 'j2', key: 'b', status: 'completed', attempt: 1, result: { owner: 'w1', attempt: 1 } },
    ],
    deadLetterIds: [],
    sinkKeys: ['a', 'b'],
    effectKeys: ['a', 'a', 'b'],
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

describe('the chaos oracle', () => {
  it('passes a clean run and counts the re-execution and the refused stale ack', () => {
    const verdict = judge(cleanRun());
    expect(verdict).toMatchObject({ jobs: 2, lost: 0, duplicateEffects: 0, staleAcks: 0, reexecutions: 1, staleAcksRefused: 1 });
    expect(passed(verdict)).toBe(true);
    expect(finalLine(verdict, { kills: 3, pauses: 1 })).toBe('jobs=2 kills=3 pauses=1 lost=0 duplicate_effects=0 stale_acks=0 reexecutions=1');
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
    ['a completed job without its effect', (r) => ({ ...r, sinkKeys: ['a'] }), { lost: 1 }],
    ['two sink rows for one key', (r) => ({ ...r, sinkKeys: ['a', 'b', 'b'] }), { duplicateEffects: 1 }],
    ['the stale worker ack accepted after the takeover', (r) => ({ ...r, ledger: r.ledger.map((e) => (e.t === 'ack' && e.token === 't1' ? { ...e, ok: true } : e)) }), { staleAcks: 1 }],
    ['the stored result from a run that was taken over', (r) => ({ ...r, jobs: [{ ...r.jobs[0], result: { owner: 'w1', attempt: 1 } }, r.jobs[1]] }), { staleAcks: 1 }],
    ['an accepted ack whose lease a later claim had taken', (r) => ({ ...r, ledger: [...r.ledger.slice(0, 5), claim('j2', 't4', 'w2', 2, 15)] }), { staleAcks: 1 }],
  ])('fails a run with %s', (_, corrupt, expected) => {
    const verdict = judge(corrupt(cleanRun()));
    expect(verdict).toMatchObject(expected);
    expect(passed(verdict)).toBe(false);
    expect(verdict.examples.length).toBeGreaterThan(0);
  });
});
