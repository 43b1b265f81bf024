/**
 * A matcher for the filters most commands send: a conjunction of fields, each compared with literal
 * scalars ({ f: v }, $eq, $ne, $in, $nin, $lt, $lte, $gt, $gte, $exists), and `$and` / `$or` of
 * such conjunctions. It answers as mongod does (a value matches a comparison only within its BSON
 * type bracket; an array field matches when one of its elements does; a dotted path goes into
 * sub-documents and into each document of an array on the way; a negation ($ne, $nin, $exists:
 * false) holds when no value on the path matches) without compiling a mingo query, which cost more
 * than the rest of planning a claim or a fenced write. Any other shape (array index path components,
 * null operands, other operators), and documents where the answer hangs on NaN or on an array
 * directly inside an array on a dotted path, go to the general matcher.
 */
import { compareBson, typeRank } from '../bson-order.js';
import { isPlainObject, type Doc } from '../values.js';

/** How one value compares with a condition's operand; undefined when this path cannot tell. */
type ValueTest = (value: unknown) => boolean;

export interface FieldTest {
  /** The field path tested (`$and` / `$or` for a group of conjunctions). */
  field: string;
  /** Tests a document; undefined when the general matcher must decide. */
  test: (doc: Doc) => boolean | undefined;
}

/** A condition on the values at a path: `base` holds for one of them (negated: for none of them). */
interface Condition {
  base: (value: unknown) => boolean | undefined;
  negated: boolean;
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

function operatorTest(op: string, operand: unknown): Condition | undefined {
  if (op === '$exists') return typeof operand === 'boolean' ? { base: (value) => value !== undefined, negated: !operand } : undefined;
  if (op === '$in' || op === '$nin') {
    if (!Array.isArray(operand) || !operand.every(isScalar)) return undefined;
    const tests = operand.map(equalTo);
    const any: ValueTest = (v) => tests.some((t) => t(v));
    return { base: (value) => anyValue(value, any), negated: op === '$nin' };
  }
  if (!isScalar(operand)) return undefined;
  if (op === '$eq' || op === '$ne') {
    const eq = equalTo(operand);
    return { base: (value) => anyValue(value, eq), negated: op === '$ne' };
  }
  if (RANGE.has(op)) {
    const t = inRange(op, operand);
    return { base: (value) => anyValue(value, t), negated: false };
  }
  return undefined;
}

function negate(r: boolean | undefined, negated: boolean): boolean | undefined {
  return r === undefined || !negated ? r : !r;
}

/**
 * The values a dotted path reaches (missing ones left out): into sub-documents, and into every
 * document of an array met on the way. False when the general matcher must decide (an array
 * directly inside an array on the way).
 */
function collectPath(value: unknown, parts: string[], i: number, out: unknown[]): boolean {
  if (i === parts.length) {
    if (value !== undefined) out.push(value);
    return true;
  }
  if (isPlainObject(value)) return collectPath(Object.hasOwn(value, parts[i]) ? value[parts[i]] : undefined, parts, i + 1, out);
  if (Array.isArray(value)) {
    for (const el of value) {
      if (Array.isArray(el)) return false;
      if (isPlainObject(el) && !collectPath(Object.hasOwn(el, parts[i]) ? el[parts[i]] : undefined, parts, i + 1, out)) return false;
    }
  }
  // Missing, or a scalar: nothing further down this path.
  return true;
}

function fieldTest(field: string, { base, negated }: Condition): FieldTest {
  if (!field.includes('.')) return { field, test: (doc) => negate(base(Object.hasOwn(doc, field) ? doc[field] : undefined), negated) };
  const parts = field.split('.');
  return {
    field,
    test(doc) {
      const values: unknown[] = [];
      if (!collectPath(doc, parts, 0, values)) return undefined;
      let found = false;
      for (const value of values) {
        const r = base(value);
        if (r === undefined) return undefined;
        if (r) {
          found = true;
          break;
        }
      }
      return negate(found, negated);
    },
  };
}

/** `$and` / `$or` of conjunctions the fast path answers. */
function groupTest(op: '$and' | '$or', branches: FieldTest[][]): FieldTest {
  const all = (tests: FieldTest[], doc: Doc): boolean | undefined => {
    for (const { test } of tests) {
      const r = test(doc);
      if (r !== true) return r;
    }
    return true;
  };
  return {
    field: op,
    test(doc) {
      let undecided = false;
      for (const branch of branches) {
        const r = all(branch, doc);
        if (r === undefined) undecided = true;
        else if (r === (op === '$or')) return r;
      }
      return undecided ? undefined : op === '$and';
    },
  };
}

/** A path the fast path can follow: no empty or `$` components, no numeric (array index) one after the first. */
function plainPath(field: string): boolean {
  if (field === '' || field.charCodeAt(0) === 36 /* $ */) return false;
  if (!field.includes('.')) return true;
  return field.split('.').every((part, i) => part !== '' && !part.startsWith('$') && (i === 0 || !/^\d+$/.test(part)));
}

/** The field tests of a filter the fast path can answer, or undefined. */
export function simpleFieldTests(filter: Doc): FieldTest[] | undefined {
  const tests: FieldTest[] = [];
  for (const [field, cond] of Object.entries(filter)) {
    if (field === '$and' || field === '$or') {
      if (!Array.isArray(cond) || cond.length === 0 || !cond.every(isPlainObject)) return undefined;
      const branches: FieldTest[][] = [];
      for (const branch of cond as Doc[]) {
        const branchTests = simpleFieldTests(branch);
        if (!branchTests) return undefined;
        branches.push(branchTests);
      }
      tests.push(groupTest(field, branches));
      continue;
    }
    if (!plainPath(field)) return undefined;
    if (isPlainObject(cond)) {
      const ops = Object.keys(cond);
      if (ops.length === 0 || !ops.every((op) => op.startsWith('$'))) return undefined;
      for (const op of ops) {
        const condition = operatorTest(op, cond[op]);
        if (!condition) return undefined;
        tests.push(fieldTest(field, condition));
      }
    } else {
      const condition = operatorTest('$eq', cond);
      if (!condition) return undefined;
      tests.push(fieldTest(field, condition));
    }
  }
  return tests;
}
