/**
 * A matcher for the filters most commands send: a conjunction of top-level fields, each compared
 * with literal scalars ({ f: v }, $eq, $ne, $in, $nin, $lt, $lte, $gt, $gte, $exists). It answers
 * as mongod does (a value matches a comparison only within its BSON type bracket; an array field
 * matches when one of its elements does) without compiling a mingo query, which cost more than the
 * rest of planning a claim. Any other shape, and documents with NaN where a field is compared, go
 * to the general matcher.
 */
import { compareBson, typeRank } from '../bson-order.js';
import { isPlainObject, type Doc } from '../values.js';

/** How one value compares with a condition's operand; undefined when this path cannot tell. */
type ValueTest = (value: unknown) => boolean;

export interface FieldTest {
  field: string;
  /** Tests the field's value (undefined when missing); undefined when the general matcher must decide. */
  test: (value: unknown) => boolean | undefined;
}

const RANGE = new Set(['$lt', '$lte', '$gt', '$gte']);

/** A literal the fast path compares exactly: string, number (not NaN), boolean, valid Date, ObjectId. */
function isScalar(v: unknown): boolean {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return !Number.isNaN(v);
    case 'object':
      if (v instanceof Date) return !Number.isNaN(v.getTime());
      return v !== null && (v as { _bsontype?: string })._bsontype === 'ObjectId';
    default:
      return false;
  }
}

function equalTo(operand: unknown): ValueTest {
  const rank = typeRank(operand);
  return (v) => typeRank(v) === rank && compareBson(v, operand) === 0;
}

function inRange(op: string, operand: unknown): ValueTest {
  const rank = typeRank(operand);
  const ok = op === '$lt' ? (c: number) => c < 0 : op === '$lte' ? (c: number) => c <= 0 : op === '$gt' ? (c: number) => c > 0 : (c: number) => c >= 0;
  return (v) => typeRank(v) === rank && ok(compareBson(v, operand));
}

/** True when the value, or (for an array) one of its elements, passes. */
function anyValue(value: unknown, test: ValueTest): boolean | undefined {
  if (Array.isArray(value)) {
    for (const el of value) {
      if (typeof el === 'number' && Number.isNaN(el)) return undefined;
      if (test(el)) return true;
    }
    return false;
  }
  if (typeof value === 'number' && Number.isNaN(value)) return undefined;
  return value !== undefined && test(value);
}

function operatorTest(op: string, operand: unknown): ((value: unknown) => boolean | undefined) | undefined {
  if (op === '$exists') return typeof operand === 'boolean' ? (value) => (value !== undefined) === operand : undefined;
  if (op === '$in' || op === '$nin') {
    if (!Array.isArray(operand) || !operand.every(isScalar)) return undefined;
    const tests = operand.map(equalTo);
    const any: ValueTest = (v) => tests.some((t) => t(v));
    if (op === '$in') return (value) => anyValue(value, any);
    return (value) => {
      const r = anyValue(value, any);
      return r === undefined ? undefined : !r;
    };
  }
  if (!isScalar(operand)) return undefined;
  if (op === '$eq') {
    const eq = equalTo(operand);
    return (value) => anyValue(value, eq);
  }
  if (op === '$ne') {
    const eq = equalTo(operand);
    return (value) => {
      const r = anyValue(value, eq);
      return r === undefined ? undefined : !r;
    };
  }
  if (RANGE.has(op)) {
    const t = inRange(op, operand);
    return (value) => anyValue(value, t);
  }
  return undefined;
}

/** The field tests of a filter the fast path can answer, or undefined. */
export function simpleFieldTests(filter: Doc): FieldTest[] | undefined {
  const tests: FieldTest[] = [];
  for (const [field, cond] of Object.entries(filter)) {
    if (field.startsWith('$') || field.includes('.') || field === '') return undefined;
    if (isPlainObject(cond)) {
      const ops = Object.keys(cond);
      if (ops.length === 0 || !ops.every((op) => op.startsWith('$'))) return undefined;
      for (const op of ops) {
        const test = operatorTest(op, cond[op]);
        if (!test) return undefined;
        tests.push({ field, test });
      }
    } else {
      const test = operatorTest('$eq', cond);
      if (!test) return undefined;
      tests.push({ field, test });
    }
  }
  return tests;
}
