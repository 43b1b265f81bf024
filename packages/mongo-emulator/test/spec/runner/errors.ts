/** The unified format's `expectError`: what kind of error, its code, labels and server response. */
import { MongoError, MongoServerError } from 'mongodb';
import type { Doc, Entities } from './entities.js';
import { match, MatchError } from './match.js';

function fail(message: string, err: unknown): never {
  const detail = err instanceof Error ? `${err.constructor.name}: ${err.message} ${JSON.stringify({ code: (err as { code?: unknown }).code, labels: (err as MongoError).errorLabels })}` : String(err);
  throw new MatchError('expectError', `${message} (got ${detail})`);
}

export function checkError(err: unknown, expected: Doc, entities: Entities): void {
  if (err instanceof MatchError) throw err;
  if (!(err instanceof Error)) fail('expected an Error', err);
  const mongoError = err as MongoError & { codeName?: string; errorResponse?: Doc; result?: unknown; partialResult?: unknown };
  if (expected.isClientError === true && err instanceof MongoServerError) fail('expected a client-side error', err);
  if (expected.isClientError === false && !(err instanceof MongoServerError)) fail('expected a server error', err);
  if (typeof expected.errorContains === 'string' && !err.message.toLowerCase().includes(expected.errorContains.toLowerCase())) {
    fail(`expected the message to contain "${expected.errorContains}"`, err);
  }
  if (expected.errorCode !== undefined && mongoError.code !== expected.errorCode) fail(`expected code ${String(expected.errorCode)}`, err);
  if (expected.errorCodeName !== undefined && mongoError.codeName !== expected.errorCodeName) fail(`expected codeName ${String(expected.errorCodeName)}`, err);
  const hasLabel = (label: string) => typeof mongoError.hasErrorLabel === 'function' && mongoError.hasErrorLabel(label);
  for (const label of (expected.errorLabelsContain as string[] | undefined) ?? []) {
    if (!hasLabel(label)) fail(`expected error label ${label}`, err);
  }
  for (const label of (expected.errorLabelsOmit as string[] | undefined) ?? []) {
    if (hasLabel(label)) fail(`expected no error label ${label}`, err);
  }
  if (expected.errorResponse !== undefined) match(expected.errorResponse, mongoError.errorResponse ?? err, entities, true, 'errorResponse');
  if (expected.expectResult !== undefined) {
    match(expected.expectResult, mongoError.partialResult ?? mongoError.result ?? err, entities, true, 'expectError.expectResult');
  }
  if (expected.writeErrors !== undefined || expected.writeConcernErrors !== undefined) {
    fail('writeErrors/writeConcernErrors assertions (client bulk write) are not supported by this runner', err);
  }
}
