import { describe, expect, it } from '@jest/globals';
import { ObjectId } from 'bson';
import { compareBson } from '../src/bson-order.js';
import { random } from './random.js';

// ObjectIds order by their 12 bytes (their hex strings' order), as mongod sorts and indexes them.
// The emulator compares bson's packed form without building hex strings; this pins the order to
// the hex strings', so a bson upgrade that changes that form fails here rather than in an index.
describe('ObjectId order', () => {
  const rnd = random(42);
  const hex = (): string => Array.from({ length: 24 }, () => '0123456789abcdef'[Math.floor(rnd() * 16)]).join('');
  const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0);

  it('is the order of the hex strings, byte by byte', () => {
    const edges = [
      '000000000000000000000000',
      'ffffffffffffffffffffffff',
      '00000000000000000000ffff',
      'ffff00000000000000000000',
      '7fffff800000000000000000',
      '800000000000000000000000',
    ];
    const pairs: [string, string][] = [];
    for (const a of edges) for (const b of edges) pairs.push([a, b]);
    for (let i = 0; i < 600; i++) {
      // The second shares the first's leading bytes (none to all twelve), so each byte can decide.
      const a = hex();
      const shared = 2 * Math.floor(rnd() * 13);
      pairs.push([a, a.slice(0, shared) + hex().slice(shared)]);
    }
    for (const [a, b] of pairs) {
      const expected = sign(a < b ? -1 : a > b ? 1 : 0);
      expect([a, b, compareBson(new ObjectId(a), new ObjectId(b))]).toEqual([a, b, expected]);
      expect([a, b, compareBson(new ObjectId(b), new ObjectId(a))]).toEqual([a, b, expected === 0 ? 0 : -expected]);
      expect(compareBson(new ObjectId(a), new ObjectId(a))).toBe(0);
    }
  });

  it('after null and a missing field (one type, equal to each other), as in an index key', () => {
    const id = new ObjectId();
    expect([compareBson(null, undefined), compareBson(undefined, null), compareBson(undefined, undefined)]).toEqual([0, 0, 0]);
    expect([compareBson(null, id), compareBson(id, undefined), compareBson(null, 0), compareBson('a', null)]).toEqual([-1, 1, -1, 1]);
  });
});
