/** Typed access to command arguments, failing with mongod's TypeMismatch wording. */
import { CommandError, notImplemented } from '../errors.js';
import { isPlainObject, type Doc } from '../values.js';
import { numericValue } from '../bson-order.js';
import { evaluateLet } from '../query/mingo-context.js';

export function collectionName(ctx: { body: Doc; name: string }): string {
  const v = ctx.body[ctx.name];
  if (typeof v !== 'string' || v.length === 0) {
    throw new CommandError('InvalidNamespace', `collection name has invalid type ${v === null ? 'null' : typeof v}`);
  }
  return v;
}

export function optionalDoc(body: Doc, command: string, field: string): Doc | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (!isPlainObject(v))
    throw new CommandError(
      'TypeMismatch',
      `BSON field '${command}.${field}' is the wrong type '${Array.isArray(v) ? 'array' : typeof v}', expected type 'object'`,
    );
  return v;
}

export function optionalNumber(body: Doc, command: string, field: string): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  const n = Number(numericValue(v));
  if (Number.isNaN(n))
    throw new CommandError('TypeMismatch', `BSON field '${command}.${field}' is the wrong type '${typeof v}', expected types '[long, int, decimal, double']`);
  return n;
}

export function nonNegative(body: Doc, command: string, field: string): number | undefined {
  const n = optionalNumber(body, command, field);
  if (n !== undefined && n < 0) throw new CommandError('BadValue', `${field} value must be non-negative, but received: ${n}`);
  return n;
}

/** Collations other than the simple binary one change comparisons the emulator does not model. */
export function rejectCollation(body: Doc, command: string): void {
  const c = body.collation;
  if (c === undefined) return;
  if (isPlainObject(c) && c.locale === 'simple') return;
  throw notImplemented(`option 'collation' of command '${command}'`);
}

export function batchSizeOf(body: Doc, command: string, field = 'batchSize'): number | undefined {
  return nonNegative(body, command, field);
}

/** The command's `let` variables, evaluated (see evaluateLet). */
export function letVariables(ctx: { body: Doc; name: string; engine: { clock: { now(): Date } } }): Doc | undefined {
  const raw = optionalDoc(ctx.body, ctx.name, 'let');
  return raw ? evaluateLet(raw, ctx.engine.clock.now()) : undefined;
}
