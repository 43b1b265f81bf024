import { describe, expect, it } from '@jest/globals';
import type { FlowDocument } from '../src/schema/documents.js';
import { FlowPermits, flowId, STALE_STARTS_KEPT, type PermitRules } from '../src/flow/flow-permits.js';
import { quietLogger, useMongoFixture } from './fixture.js';

// The rate-limit starts of one grant are one entry of the flow document (its tokens, their count,
// their start), so a window's document grows with the grants in it, not the starts. These pin what
// that must not change: a start given back frees exactly its own room, and no other start's.
const fixture = useMongoFixture();
const at = (ms: number): Date => new Date(Date.UTC(2026, 0, 1) + ms);
const rate: PermitRules = { rate: { limit: 5, perMs: 1_000 }, concurrencyKind: 'globalConcurrency' };

async function permits(): Promise<{ permits: FlowPermits; docs: () => Promise<FlowDocument[]> }> {
  const flow = fixture.mongo.client.db(fixture.mongo.newDatabaseName('permits')).collection<FlowDocument>('loom_flow');
  return { permits: new FlowPermits(flow, quietLogger), docs: () => flow.find().toArray() };
}

describe('rate-limit permits, one entry per grant', () => {
  it('stores the starts of one grant as one entry, and grants only the room left in the window', async () => {
    const { permits: p, docs } = await permits();
    const first = await p.acquire(flowId('send'), ['a', 'b', 'c'], rate, at(0), at(30_000));
    expect(first).toEqual({ granted: ['a', 'b', 'c'] });
    const second = await p.acquire(flowId('send'), ['d', 'e', 'f'], rate, at(10), at(30_000));
    expect(second.granted).toEqual(['d', 'e']);
    expect(second.hold).toEqual({ by: 'rateLimit', until: at(1_000) });
    const [doc] = await docs();
    expect(doc!.s).toEqual([
      { t: ['a', 'b', 'c'], c: 3, a: at(0) },
      { t: ['d', 'e'], c: 2, a: at(10) },
    ]);
  });

  it('a start given back frees its own room only: the other starts of its grant still count', async () => {
    const { permits: p, docs } = await permits();
    expect((await p.acquire(flowId('send'), ['a', 'b', 'c', 'd'], rate, at(0), at(30_000))).granted).toHaveLength(4);
    // Two of the grant's jobs went to another claim: their starts go back, the other two stay.
    await p.giveBack(flowId('send'), ['b', 'd']);
    expect((await docs())[0]!.s).toEqual([{ t: ['a', 'c'], c: 2, a: at(0) }]);
    // 2 starts in the window: room for 3 more, not 5.
    expect((await p.acquire(flowId('send'), ['e', 'f', 'g', 'h'], rate, at(1), at(30_000))).granted).toEqual(['e', 'f', 'g']);
    // A grant given back whole leaves no entry behind.
    await p.giveBack(flowId('send'), ['e', 'f', 'g']);
    expect((await docs())[0]!.s).toEqual([{ t: ['a', 'c'], c: 2, a: at(0) }]);
  });

  it('starts leave the window with their grant; the hold says when the oldest grant leaves', async () => {
    const { permits: p } = await permits();
    expect((await p.acquire(flowId('send'), ['a', 'b'], rate, at(0), at(30_000))).granted).toHaveLength(2);
    expect((await p.acquire(flowId('send'), ['c', 'd', 'e'], rate, at(400), at(30_000))).granted).toHaveLength(3);
    expect(await p.acquire(flowId('send'), ['f'], rate, at(999), at(30_000))).toEqual({ granted: [], hold: { by: 'rateLimit', until: at(1_000) } });
    // At 1 s the first grant's two starts left the window: room for exactly two.
    expect((await p.acquire(flowId('send'), ['f', 'g', 'h'], rate, at(1_000), at(30_000))).granted).toEqual(['f', 'g']);
  });

  it(`keeps grants that left the window until ${STALE_STARTS_KEPT} have, then drops them in one update; they never count`, async () => {
    const { permits: p, docs } = await permits();
    const wide: PermitRules = { rate: { limit: 1_000, perMs: 1_000 }, concurrencyKind: 'globalConcurrency' };
    for (let i = 0; i < 40; i++) expect((await p.acquire(flowId('send'), [`t${i}`], wide, at(i), at(30_000))).granted).toEqual([`t${i}`]);
    // At 1,030 ms the grants of 0..30 ms left the window (31 of them): kept, appended to.
    await p.acquire(flowId('send'), ['x'], wide, at(1_030), at(30_000));
    expect((await docs())[0]!.s).toHaveLength(41);
    // At 1,031 ms 32 have left: dropped, and only the 9 still in the window remain beside the new grant.
    await p.acquire(flowId('send'), ['y'], wide, at(1_031), at(30_000));
    const s = (await docs())[0]!.s!;
    expect(s.map((grant) => grant.a.getTime() - at(0).getTime())).toEqual([32, 33, 34, 35, 36, 37, 38, 39, 1_030, 1_031]);
    // Grants kept after leaving the window do not count: a limit of 2 per second reopens on time.
    const two: PermitRules = { rate: { limit: 2, perMs: 1_000 }, concurrencyKind: 'globalConcurrency' };
    expect((await p.acquire(flowId('mail'), ['a', 'b'], two, at(0), at(30_000))).granted).toEqual(['a', 'b']);
    expect((await p.acquire(flowId('mail'), ['c', 'd'], two, at(1_000), at(30_000))).granted).toEqual(['c', 'd']);
    expect(await p.acquire(flowId('mail'), ['e'], two, at(1_500), at(30_000))).toEqual({ granted: [], hold: { by: 'rateLimit', until: at(2_000) } });
  });
});
