/**
 * A compiled evaluator for the common shape of update pipelines: `$set` / `$addFields` of top-level
 * fields and `$unset` of top-level fields, with the aggregation expressions such updates are made
 * of (field paths, variables, `$let`, `$filter`, `$cond`, `$ifNull`, comparisons, `$size`, `$sum`, `$add`,
 * `$subtract`, `$min`, `$max`, `$concatArrays`, `$slice`, `$and`, `$or`, `$not`, `$literal`, and the
 * `$concat` and `$toString` a batch claim's lease tokens are made of).
 *
 * mingo interprets a pipeline anew for every document, copying its options and walking each
 * expression through its operator table value by value: an update that filters an array of a few
 * hundred entries cost milliseconds. Here each expression becomes a closure once per command and
 * runs on plain values.
 *
 * Only what is certain is decided here. Anything else — another stage or operator, a dotted or
 * nested field spec over an existing field, a value whose MongoDB answer takes a rule this file does not implement (a
 * nested array in a field path, arithmetic on a non-number, an operand of the wrong type, which
 * mongod rejects) — throws {@link Unhandled}, and the caller runs the whole pipeline through mingo
 * as before. Expressions have no side effects, so running them again there is safe.
 */
import { compareBson, objectIdHex, typeRank, TypeRank } from '../bson-order.js';
import { isPlainObject, type Doc } from '../values.js';
import { Unhandled } from '../errors.js';

const unhandled = (why: string): never => {
  throw new Unhandled(why);
};

type Vars = Record<string, unknown>;

/** Where the command's `$$NOW` is kept among the variables (no user variable can have this name). */
const NOW = 'NOW';
/** A user variable's name, as `$let` and `$filter` accept it. */
const VARIABLE_NAME = /^[a-z_][A-Za-z0-9_]*$/;
/** A compiled expression: its value for the document `root` under `vars` (`undefined`: missing). */
type Expr = (root: Doc, vars: Vars) => unknown;

const isMissing = (v: unknown): boolean => v === undefined || v === null;

/** MongoDB's truthiness of an expression's value ($cond, $and, $or, $not, $filter's cond). */
function truthy(v: unknown): boolean {
  if (v === undefined || v === null || v === false) return false;
  if (v === true) return true;
  if (typeof v === 'number') return Number.isNaN(v) ? unhandled('NaN as a condition') : v !== 0;
  if (typeof v === 'string' || Array.isArray(v) || v instanceof Date || isPlainObject(v)) return true;
  return unhandled('a condition of another BSON type');
}

/** The values a field path reaches (MongoDB's rule: through arrays, one value per element that has it). */
function resolvePath(value: unknown, parts: string[], from: number): unknown {
  let v = value;
  for (let i = from; i < parts.length; i++) {
    if (Array.isArray(v)) {
      const out: unknown[] = [];
      for (const el of v) {
        if (Array.isArray(el)) unhandled('a field path through nested arrays');
        if (!isPlainObject(el)) continue;
        const r = resolvePath(el, parts, i);
        if (r !== undefined) out.push(r);
      }
      return out;
    }
    if (!isPlainObject(v)) return undefined;
    v = v[parts[i]!];
  }
  return v;
}

function fieldPath(path: string): Expr {
  const parts = path.split('.');
  if (parts.some((p) => p === '' || p.startsWith('$'))) unhandled('an unusual field path');
  return (root) => resolvePath(root, parts, 0);
}

function variable(spec: string): Expr {
  const [name, ...rest] = spec.split('.');
  if (rest.some((p) => p === '' || p.startsWith('$'))) unhandled('an unusual variable path');
  if (name === 'REMOVE') return rest.length === 0 ? () => undefined : unhandled('a path under $$REMOVE');
  if (name === 'ROOT' || name === 'CURRENT') return (root) => resolvePath(root, rest, 0);
  if (name === 'NOW') return rest.length === 0 ? (_root, vars) => new Date((vars[NOW] as Date).getTime()) : unhandled('a path under $$NOW');
  if (!VARIABLE_NAME.test(name!)) unhandled(`the system variable $$${name}`);
  return (_root, vars) => {
    if (!Object.prototype.hasOwnProperty.call(vars, name!)) unhandled(`an undefined variable $$${name}`);
    return resolvePath(vars[name!], rest, 0);
  };
}

/** Arguments of an operator as a list (`{ $op: x }` is `[x]` unless x is an array literal). */
function argList(args: unknown): unknown[] {
  return Array.isArray(args) ? args : [args];
}

/**
 * Aggregation's order: BSON's, with a missing value (`undefined`) below null and above MinKey
 * (the stored-value order of {@link compareBson} does not tell missing from null).
 */
function compareValues(x: unknown, y: unknown): number {
  if (x !== undefined && y !== undefined) return compareBson(x, y);
  if (x === y) return 0;
  if (x === undefined) return typeRank(y) === TypeRank.MinKey ? 1 : -1;
  return typeRank(x) === TypeRank.MinKey ? -1 : 1;
}

function compare(op: string, args: unknown): Expr {
  const list = argList(args);
  if (list.length !== 2) unhandled(`${op} with ${list.length} arguments`);
  const [a, b] = list.map(compile) as [Expr, Expr];
  const test: (c: number) => unknown =
    op === '$eq'
      ? (c) => c === 0
      : op === '$ne'
        ? (c) => c !== 0
        : op === '$gt'
          ? (c) => c > 0
          : op === '$gte'
            ? (c) => c >= 0
            : op === '$lt'
              ? (c) => c < 0
              : op === '$lte'
                ? (c) => c <= 0
                : (c) => c; // $cmp
  return (root, vars) => {
    return test(compareValues(a(root, vars), b(root, vars)));
  };
}

const isNumber = (v: unknown): v is number => typeof v === 'number';

function add(args: unknown): Expr {
  const terms = argList(args).map(compile);
  return (root, vars) => {
    let sum = 0;
    let date: Date | undefined;
    for (const term of terms) {
      const v = term(root, vars);
      if (isMissing(v)) return null;
      if (isNumber(v)) sum += v;
      else if (v instanceof Date && date === undefined) date = v;
      else unhandled('$add of a value that is not a number or a single date');
    }
    if (date === undefined) return sum;
    return Number.isInteger(sum) ? new Date(date.getTime() + sum) : unhandled('$add of a date and a fraction');
  };
}

function subtract(args: unknown): Expr {
  const list = argList(args);
  if (list.length !== 2) unhandled('$subtract without two arguments');
  const [a, b] = list.map(compile) as [Expr, Expr];
  return (root, vars) => {
    const x = a(root, vars);
    const y = b(root, vars);
    if (isMissing(x) || isMissing(y)) return null;
    if (isNumber(x) && isNumber(y)) return x - y;
    if (x instanceof Date && y instanceof Date) return x.getTime() - y.getTime();
    if (x instanceof Date && isNumber(y) && Number.isInteger(y)) return new Date(x.getTime() - y);
    return unhandled('$subtract of these types');
  };
}

/** `$min` / `$max` as expressions: over the elements of a lone array argument, or over the arguments; nulls and missing values ignored. */
function extreme(op: '$min' | '$max', args: unknown): Expr {
  const terms = argList(args).map(compile);
  const better = op === '$min' ? (c: number) => c < 0 : (c: number) => c > 0;
  return (root, vars) => {
    let values: unknown[] = terms.map((t) => t(root, vars));
    // One operand that is an array: over its elements (as mongod's accumulator expressions do).
    if (terms.length === 1 && Array.isArray(values[0])) values = values[0];
    let best: unknown = null;
    for (const v of values) {
      if (isMissing(v)) continue;
      if (best === null || better(compareBson(v, best))) best = v;
    }
    return best;
  };
}

/**
 * `$sum` as an expression: of one operand that is an array, its numeric elements; of several
 * operands, the numeric ones (an array among several is not summed); anything else counts 0.
 */
function sum(args: unknown): Expr {
  const terms = argList(args).map(compile);
  const addUp = (values: readonly unknown[]): number => {
    let total = 0;
    for (const v of values) {
      if (isNumber(v)) total += v;
      // Long, Decimal128 and the other numeric BSON types: mongod's typed sum is left to mingo.
      else if (typeRank(v) === TypeRank.Number) unhandled('$sum of a numeric BSON type');
    }
    return total;
  };
  return (root, vars) => {
    const values = terms.map((t) => t(root, vars));
    return addUp(terms.length === 1 && Array.isArray(values[0]) ? (values[0] as unknown[]) : values);
  };
}

function size(args: unknown): Expr {
  const list = argList(args);
  if (list.length !== 1) unhandled('$size without one argument');
  const a = compile(list[0]);
  return (root, vars) => {
    const v = a(root, vars);
    return Array.isArray(v) ? v.length : unhandled('$size of a value that is not an array');
  };
}

function concatArrays(args: unknown): Expr {
  const terms = argList(args).map(compile);
  return (root, vars) => {
    const out: unknown[] = [];
    for (const term of terms) {
      const v = term(root, vars);
      if (isMissing(v)) return null;
      if (!Array.isArray(v)) unhandled('$concatArrays of a value that is not an array');
      for (const el of v as unknown[]) out.push(el);
    }
    return out;
  };
}

function slice(args: unknown): Expr {
  if (!Array.isArray(args) || args.length !== 2) unhandled('$slice without two arguments');
  const [a, n] = (args as unknown[]).map(compile) as [Expr, Expr];
  return (root, vars) => {
    const array = a(root, vars);
    const count = n(root, vars);
    if (isMissing(array)) return null;
    if (!Array.isArray(array) || !isNumber(count) || !Number.isInteger(count)) return unhandled('$slice of these types');
    const items: unknown[] = array;
    return count >= 0 ? items.slice(0, count) : items.slice(Math.max(0, items.length + count));
  };
}

function ifNull(args: unknown): Expr {
  if (!Array.isArray(args) || args.length < 2) unhandled('$ifNull without two arguments');
  const terms = (args as unknown[]).map(compile);
  return (root, vars) => {
    for (let i = 0; i < terms.length - 1; i++) {
      const v = terms[i]!(root, vars);
      if (!isMissing(v)) return v;
    }
    return terms[terms.length - 1]!(root, vars);
  };
}

function cond(args: unknown): Expr {
  let parts: unknown[];
  if (Array.isArray(args)) parts = args;
  else if (isPlainObject(args) && Object.keys(args).length === 3 && 'if' in args && 'then' in args && 'else' in args) parts = [args.if, args.then, args.else];
  else return unhandled('this form of $cond');
  if (parts.length !== 3) unhandled('$cond without three arguments');
  const [test, then, otherwise] = parts.map(compile) as [Expr, Expr, Expr];
  return (root, vars) => (truthy(test(root, vars)) ? then(root, vars) : otherwise(root, vars));
}

function logical(op: '$and' | '$or' | '$not', args: unknown): Expr {
  const terms = argList(args).map(compile);
  if (op === '$not') {
    if (terms.length !== 1) unhandled('$not without one argument');
    return (root, vars) => !truthy(terms[0]!(root, vars));
  }
  if (op === '$and') return (root, vars) => terms.every((t) => truthy(t(root, vars)));
  return (root, vars) => terms.some((t) => truthy(t(root, vars)));
}

function filter(args: unknown): Expr {
  if (!isPlainObject(args) || !('input' in args) || !('cond' in args) || Object.keys(args).some((k) => !['input', 'cond', 'as'].includes(k))) {
    return unhandled('this form of $filter');
  }
  const as = args.as === undefined ? 'this' : args.as;
  if (typeof as !== 'string' || !VARIABLE_NAME.test(as)) unhandled('this $filter variable name');
  const input = compile(args.input);
  const test = compile(args.cond);
  return (root, vars) => {
    const array = input(root, vars);
    if (isMissing(array)) return null;
    if (!Array.isArray(array)) unhandled('$filter of a value that is not an array');
    const inner: Vars = { ...vars };
    const out: unknown[] = [];
    for (const el of array as unknown[]) {
      inner[as as string] = el;
      if (truthy(test(root, inner))) out.push(el);
    }
    return out;
  };
}

function letExpr(args: unknown): Expr {
  if (!isPlainObject(args) || !isPlainObject(args.vars) || !('in' in args) || Object.keys(args).length !== 2) return unhandled('this form of $let');
  const names = Object.keys(args.vars);
  if (names.some((n) => !VARIABLE_NAME.test(n))) unhandled('this $let variable name');
  const values = names.map((n) => compile((args.vars as Doc)[n]));
  const body = compile(args.in);
  return (root, vars) => {
    const inner: Vars = { ...vars };
    names.forEach((n, i) => (inner[n] = values[i]!(root, vars)));
    return body(root, inner);
  };
}

/** `$toString` of the values claims make tokens of: a string, an ObjectId (its hex digits), a date; null for missing. */
function toStringExpr(args: unknown): Expr {
  const arg = compile(Array.isArray(args) ? (args.length === 1 ? args[0] : unhandled('$toString with several arguments')) : args);
  return (root, vars) => {
    const v = arg(root, vars);
    if (isMissing(v)) return null;
    if (typeof v === 'string') return v;
    if (v instanceof Date) return v.toISOString();
    return objectIdHex(v) ?? unhandled('$toString of another BSON type');
  };
}

/** `$concat` of strings; null when any operand is null or missing (mongod refuses other types: left to mingo). */
function concat(args: unknown): Expr {
  if (!Array.isArray(args)) return unhandled('this form of $concat');
  const parts = args.map(compile);
  return (root, vars) => {
    let out = '';
    for (const part of parts) {
      const v = part(root, vars);
      if (isMissing(v)) return null;
      out += typeof v === 'string' ? v : unhandled('$concat of a value that is not a string');
    }
    return out;
  };
}

/**
 * A literal value, shared as it is: expressions never change their operands, and the document a
 * pipeline makes is copied once at the end (`runPipeline`), so it shares nothing with the command.
 */
function constant(v: unknown): Expr {
  return () => v;
}

const OPERATORS: Record<string, (args: unknown) => Expr> = {
  $literal: constant,
  $ifNull: ifNull,
  $cond: cond,
  $eq: (args) => compare('$eq', args),
  $ne: (args) => compare('$ne', args),
  $gt: (args) => compare('$gt', args),
  $gte: (args) => compare('$gte', args),
  $lt: (args) => compare('$lt', args),
  $lte: (args) => compare('$lte', args),
  $cmp: (args) => compare('$cmp', args),
  $size: size,
  $sum: sum,
  $add: add,
  $subtract: subtract,
  $min: (args) => extreme('$min', args),
  $max: (args) => extreme('$max', args),
  $concatArrays: concatArrays,
  $slice: slice,
  $and: (args) => logical('$and', args),
  $or: (args) => logical('$or', args),
  $not: (args) => logical('$not', args),
  $filter: filter,
  $let: letExpr,
  $toString: toStringExpr,
  $concat: concat,
};

/** Compiles one aggregation expression; throws {@link Unhandled} for what this file does not decide. */
export function compile(expr: unknown): Expr {
  if (typeof expr === 'string') {
    if (expr.startsWith('$$')) return variable(expr.slice(2));
    if (expr.startsWith('$')) return fieldPath(expr.slice(1));
    return () => expr;
  }
  if (Array.isArray(expr)) {
    const items = expr.map(compile);
    return (root, vars) =>
      items.map((item) => {
        const v = item(root, vars);
        // An array expression makes a missing element null; left to mingo.
        return v === undefined ? unhandled('a missing value in an array expression') : v;
      });
  }
  if (isPlainObject(expr)) {
    const keys = Object.keys(expr);
    if (keys.length > 0 && keys[0]!.startsWith('$')) {
      const make = keys.length === 1 ? OPERATORS[keys[0]!] : undefined;
      return make ? make(expr[keys[0]!]) : unhandled(`the expression ${keys.join(', ')}`);
    }
    if (keys.some((k) => k.startsWith('$') || k.includes('.') || k === '')) unhandled('an expression object with these field names');
    const fields = keys.map((k) => [k, compile(expr[k])] as const);
    return (root, vars) => {
      const out: Doc = {};
      for (const [k, f] of fields) {
        const v = f(root, vars);
        if (v !== undefined) out[k] = v;
      }
      return out;
    };
  }
  return constant(expr);
}

/**
 * A compiled update pipeline: the document after it, from the document before, the command's `let`
 * variables and `$$NOW`. The result shares values with its inputs: copy it before storing it.
 */
export type CompiledPipeline = (doc: Doc, variables: Vars | undefined, now: Date) => Doc;

/**
 * Compiles an update pipeline of `$set` / `$addFields` / `$unset` stages over top-level fields;
 * throws {@link Unhandled} for any other shape.
 */
export function compileUpdatePipeline(pipeline: unknown[]): CompiledPipeline {
  const stages = pipeline.map((stage): ((doc: Doc, vars: Vars) => Doc) => {
    if (!isPlainObject(stage)) return unhandled('a stage that is not a document');
    const [name, ...more] = Object.keys(stage);
    if (more.length > 0) unhandled('a stage with several names');
    const spec = stage[name!];
    if (name === '$set' || name === '$addFields') {
      if (!isPlainObject(spec) || Object.keys(spec).length === 0) return unhandled(`this ${name}`);
      const fields = Object.keys(spec).map((k) => {
        if (k === '' || k.startsWith('$') || k.includes('.')) unhandled(`the ${name} field ${k}`);
        const value = spec[k];
        // A sub-document of field specs merges into an existing document (or into each element of
        // an array): left to mingo. Where the field is missing, it is the new document.
        if (isPlainObject(value) && !Object.keys(value)[0]?.startsWith('$')) {
          const nested = compile(value);
          return [
            k,
            (root: Doc, vars: Vars) => (root[k] === undefined ? nested(root, vars) : unhandled(`a nested ${name} spec over an existing field`)),
          ] as const;
        }
        return [k, compile(value)] as const;
      });
      return (doc, vars) => {
        const values = fields.map(([, f]) => f(doc, vars));
        const out: Doc = { ...doc };
        fields.forEach(([k], i) => {
          if (values[i] === undefined) delete out[k];
          else out[k] = values[i];
        });
        return out;
      };
    }
    if (name === '$unset') {
      const paths = typeof spec === 'string' ? [spec] : Array.isArray(spec) && spec.length > 0 ? spec : unhandled('this $unset');
      if (paths.some((p) => typeof p !== 'string' || p === '' || p.startsWith('$') || p.includes('.') || p === '_id')) unhandled('these $unset fields');
      return (doc) => {
        const out: Doc = { ...doc };
        for (const p of paths as string[]) delete out[p];
        return out;
      };
    }
    return unhandled(`the stage ${String(name)}`);
  });
  return (doc, variables, now) => {
    const vars: Vars = { ...variables, [NOW]: now };
    return stages.reduce((d, stage) => stage(d, vars), doc);
  };
}
