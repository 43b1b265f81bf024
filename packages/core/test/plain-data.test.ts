import { describe, expect, it } from '@jest/globals';
import { findPlainDataProblem, inspectPlainData, MAX_PLAIN_DATA_DEPTH, plainDataSize } from '../src/support/plain-data.js';

/** Nests `leaf` in `levels` arrays. */
const nested = (levels: number, leaf: unknown): unknown => {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

class Money {
  constructor(readonly cents: number) {}
}

const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = { back: cyclic };
const shared = { x: 1 };
const nullProto = Object.assign(Object.create(null) as object, { k: 'v' });

/** Values on both sides of the rule, each edge of it once. */
const values: Array<[string, unknown]> = [
  ['a string', 'héllo'],
  ['a number', 1.5],
  ['NaN', Number.NaN],
  ['a boolean', true],
  ['null', null],
  ['undefined', undefined],
  ['a Date', new Date(0)],
  ['an invalid Date', new Date(Number.NaN)],
  ['an empty array', []],
  ['an empty object', {}],
  ['a sparse array', [1, , 3]], // eslint-disable-line no-sparse-arrays
  ['a payload', { to: 'a@b.c', items: [{ sku: 'x', n: 2 }], at: new Date(5), note: undefined }],
  ['the same object twice (not a cycle)', { a: shared, b: [shared] }],
  ['a null-prototype object', nullProto],
  ['a function inside', { a: [1, { f: () => 1 }] }],
  ['a symbol', { s: Symbol('s') }],
  ['a BigInt', [1n]],
  ['a symbol key', { [Symbol('k')]: 1 }],
  ['a class instance', { m: new Money(1) }],
  ['a Map', new Map()],
  ['a cycle', cyclic],
  ['nested to the limit', nested(MAX_PLAIN_DATA_DEPTH, 1)],
  ['nested past the limit', nested(MAX_PLAIN_DATA_DEPTH + 1, 1)],
  ['an empty array past the limit', nested(MAX_PLAIN_DATA_DEPTH, [])],
  ['an empty array at the limit', nested(MAX_PLAIN_DATA_DEPTH - 1, [])],
];

describe('the plain-data rule: the fast check agrees with the one that names the path', () => {
  it.each(values)('%s', (_what, value) => {
    const slow = inspectPlainData(value);
    expect(plainDataSize(value)).toBe(slow.problem ? null : slow.size);
    expect(findPlainDataProblem(value)).toEqual(slow.problem);
  });

  it('names where a value breaks the rule', () => {
    expect(findPlainDataProblem({ a: [1, { f: () => 1 }] })).toEqual({ path: 'a[1].f', reason: 'is a function' });
    expect(findPlainDataProblem(cyclic)?.path).toBe('self.back');
  });

  it('refuses a value over the size limit with the size', () => {
    expect(findPlainDataProblem({ s: 'x'.repeat(100) }, 50)?.reason).toMatch(/^is about 113 bytes serialized, over the 50-byte limit/);
  });
});
