import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Document } from 'mongodb';
import { openTarget, type Target } from './target.js';

// explain (queryPlanner) says whether a query is answered by an index, in mongod's stage shape, so
// tests can prove a query is index-backed on the emulator and on mongod alike.
let t: Target;

beforeAll(async () => {
  t = await openTarget();
  const coll = t.db.collection('explained');
  await coll.insertMany([{ a: 1, b: 'x' }, { a: 2, b: 'y' }]);
  await coll.createIndex({ a: 1 }, { name: 'by_a' });
});
afterAll(async () => {
  await t.close();
});

function stages(plan: unknown, out: string[] = []): string[] {
  if (Array.isArray(plan)) plan.forEach((p) => stages(p, out));
  else if (plan && typeof plan === 'object') {
    for (const [key, value] of Object.entries(plan)) {
      if (key === 'stage' && typeof value === 'string') out.push(value);
      else if (key !== 'command' && key !== 'parsedQuery') stages(value, out);
    }
  }
  return out;
}

const explain = (inner: Document) => t.db.command({ explain: inner, verbosity: 'queryPlanner' });

describe('explain', () => {
  it('shows an index scan for a find on an indexed field and a collection scan otherwise', async () => {
    expect(stages(await explain({ find: 'explained', filter: { a: 1 } }))).toContain('IXSCAN');
    expect(stages(await explain({ find: 'explained', filter: { b: 'x' } }))).toContain('COLLSCAN');
    expect(stages(await explain({ find: 'explained', filter: {}, hint: 'by_a' }))).toContain('IXSCAN');
  });

  it('explains aggregate by its leading $match, and count', async () => {
    expect(stages(await explain({ aggregate: 'explained', pipeline: [{ $match: { a: 2 } }, { $group: { _id: null, n: { $sum: 1 } } }], cursor: {} }))).toContain(
      'IXSCAN',
    );
    expect(stages(await explain({ aggregate: 'explained', pipeline: [{ $group: { _id: '$b', n: { $sum: 1 } } }], cursor: {} }))).toContain('COLLSCAN');
    expect(stages(await explain({ count: 'explained', query: { a: { $gt: 0 } } }))).toContain('IXSCAN');
  });

  it('reads nothing: the explained documents are untouched and no cursor is left open', async () => {
    const reply = await explain({ find: 'explained', filter: { a: 1 } });
    expect(reply).not.toHaveProperty('cursor');
    expect(await t.db.collection('explained').countDocuments()).toBe(2);
  });
});
