/**
 * mingo with MongoDB's semantics where its own differ: `$elemMatch` with field conditions only
 * matches object elements (mingo also matched scalars), `$type` knows the BSON types mingo
 * lacks (objectId, binData, timestamp, minKey, maxKey), and `$toString` converts an ObjectId to its
 * hex string as mongod does (mingo refused it). Numeric subtypes (int/long/double/
 * decimal) are refused: documents are stored with promoted JS numbers, which cannot tell 2 from
 * 2.0, so an answer would be a guess.
 */
import { Context, evalExpr } from 'mingo/core';
import { Query as QueryBase } from 'mingo/query';
import { Aggregator as AggregatorBase } from 'mingo/aggregator';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import * as projectionOperators from 'mingo/operators/projection';
import * as queryOperators from 'mingo/operators/query';
import * as windowOperators from 'mingo/operators/window';
import { notImplemented, CommandError } from '../errors.js';
import { objectIdHex, typeRank, TypeRank } from '../bson-order.js';
import { isPlainObject, pathValues, type Doc } from '../values.js';

type Predicate = (doc: unknown) => boolean;
type QueryOperator = (selector: string, value: unknown, options: object) => Predicate;

const LOGICAL = new Set(['$and', '$or', '$nor']);

const $elemMatch: QueryOperator = (selector, criteria, options) => {
  if (!isPlainObject(criteria)) throw new CommandError('BadValue', '$elemMatch needs an Object');
  const keys = Object.keys(criteria);
  const operatorsOnly = keys.length > 0 && keys.every((k) => k.startsWith('$') && !LOGICAL.has(k));
  const query = new QueryBase(operatorsOnly ? { v: criteria } : criteria, options);
  return (doc) => {
    for (const value of pathValues(doc, selector, false)) {
      if (!Array.isArray(value)) continue;
      for (const el of value) {
        if (operatorsOnly ? query.test({ v: el }) : isPlainObject(el) && query.test(el)) return true;
      }
    }
    return false;
  };
};

const TYPE_RANKS: Record<string, TypeRank> = {
  string: TypeRank.String,
  2: TypeRank.String,
  object: TypeRank.Object,
  3: TypeRank.Object,
  array: TypeRank.Array,
  4: TypeRank.Array,
  binData: TypeRank.BinData,
  5: TypeRank.BinData,
  objectId: TypeRank.ObjectId,
  7: TypeRank.ObjectId,
  bool: TypeRank.Boolean,
  8: TypeRank.Boolean,
  date: TypeRank.Date,
  9: TypeRank.Date,
  null: TypeRank.Null,
  10: TypeRank.Null,
  regex: TypeRank.RegExp,
  11: TypeRank.RegExp,
  timestamp: TypeRank.Timestamp,
  17: TypeRank.Timestamp,
  minKey: TypeRank.MinKey,
  '-1': TypeRank.MinKey,
  maxKey: TypeRank.MaxKey,
  127: TypeRank.MaxKey,
  number: TypeRank.Number,
};

function typeTest(alias: unknown): (v: unknown) => boolean {
  const rank = TYPE_RANKS[String(alias)];
  if (rank === undefined) {
    if (['double', 'int', 'long', 'decimal', '1', '16', '18', '19'].includes(String(alias))) {
      throw notImplemented(`$type '${String(alias)}' (numbers are stored without their BSON subtype; use 'number')`);
    }
    throw new CommandError('BadValue', `Unknown type name alias: ${String(alias)}`);
  }
  if (rank === TypeRank.Null) return (v) => v === null;
  if (rank === TypeRank.Array) return Array.isArray;
  return (v) => v !== undefined && typeRank(v) === rank;
}

const $type: QueryOperator = (selector, spec) => {
  const tests = (Array.isArray(spec) ? spec : [spec]).map(typeTest);
  const matches = (v: unknown) => tests.some((t) => t(v));
  return (doc) => pathValues(doc, selector, false).some((v) => matches(v) || (Array.isArray(v) && v.some(matches)));
};

type ExpressionOperator = (obj: unknown, expr: unknown, options: object) => unknown;

/** mongod's `$toString`: an ObjectId becomes its 24 hex digits; everything else as mingo converts it. */
const $toString: ExpressionOperator = (obj, expr, options) => {
  const value = evalExpr(obj as never, expr as never, options as never);
  return objectIdHex(value) ?? (expressionOperators.$toString as ExpressionOperator)(obj, { $literal: value }, options);
};

/** mingo's operators with the emulator's own query operators, plus `extraQuery` ones. */
function operatorContext(extraQuery: Record<string, QueryOperator> = {}): Context {
  return Context.init({
    accumulator: accumulatorOperators,
    expression: { ...expressionOperators, $toString },
    pipeline: pipelineOperators,
    projection: projectionOperators,
    query: { ...queryOperators, $elemMatch, $type, ...extraQuery } as never,
    window: windowOperators,
  } as never);
}

export const mongoContext = operatorContext();

/**
 * mingo's compute options over {@link mongoContext}, made once. Handed plain options, mingo copies
 * the whole operator table into a fresh context for every query it compiles (a tenth of a claim's
 * CPU); handed one of its own ComputeOptions it reuses that context. Its class is not exported, so
 * one instance is taken from the options mingo passes to a query operator, in a context of its own
 * whose capturing operator refuses every later use as mingo refuses an unknown operator.
 */
const sharedOptions: object = (() => {
  let captured: object | undefined;
  const capture: QueryOperator = (_selector, _value, options) => {
    if (captured) throw new Error('unknown query operator $emulatorCaptureOptions');
    captured = options;
    return () => true;
  };
  new QueryBase({ x: { $emulatorCaptureOptions: 1 } }, { context: operatorContext({ $emulatorCaptureOptions: capture }) });
  return captured!;
})();

export class MongoQuery extends QueryBase<Doc> {
  constructor(condition: Doc, options: { variables?: Doc } = {}) {
    super(condition, options.variables ? { ...options, context: mongoContext } : (sharedOptions as never));
  }
}

/**
 * `$$NOW` as the emulator clock's time (mingo would read the wall clock): every occurrence in a
 * pipeline becomes the same literal date, as one command sees one NOW on mongod.
 */
export function withNow<T>(pipeline: T, now: Date): T {
  const replace = (v: unknown): unknown => {
    if (v === '$$NOW') return { $literal: new Date(now.getTime()) };
    if (Array.isArray(v)) return v.map(replace);
    if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, replace(x)]));
    return v;
  };
  return replace(pipeline) as T;
}

export class MongoAggregator extends AggregatorBase {
  constructor(pipeline: Doc[], options: { variables?: Doc; collectionResolver?: (name: string) => Doc[] } = {}) {
    super(pipeline, { ...options, context: mongoContext } as never);
  }
}

/**
 * A command's `let` variables: each value is an expression, evaluated once for the command
 * (`{ $literal: "$x" }` is the string "$x", `{ $rand: {} }` a number), as mongod evaluates them.
 */
export function evaluateLet(variables: Doc, now: Date): Doc {
  const [out] = new MongoAggregator([{ $addFields: withNow(variables, now) }]).run([{}]) as Doc[];
  return out ?? {};
}
