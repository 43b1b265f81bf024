/**
 * Server errors as the driver sees them: `{ ok: 0, errmsg, code, codeName, errorLabels? }`.
 * Codes and names follow mongod's error_codes.yml so driver logic keyed on them (retries,
 * `collection.drop()` returning false, withTransaction's label checks) behaves as with mongod.
 */
export const ErrorCodes = {
  InternalError: 1,
  BadValue: 2,
  NoSuchKey: 4,
  FailedToParse: 9,
  TypeMismatch: 14,
  Unauthorized: 13,
  IllegalOperation: 20,
  AlreadyInitialized: 23,
  LockTimeout: 24,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  PathNotViable: 28,
  ConflictingUpdateOperators: 40,
  CursorNotFound: 43,
  NoMatchingDocument: 47,
  NamespaceExists: 48,
  MaxTimeMSExpired: 50,
  DollarPrefixedFieldName: 52,
  CommandNotFound: 59,
  ShardKeyNotFound: 61,
  ShardNotFound: 70,
  InvalidOptions: 72,
  ImmutableField: 66,
  InvalidNamespace: 73,
  NoReplicationEnabled: 76,
  UnknownReplWriteConcern: 79,
  UnsatisfiableWriteConcern: 100,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  CannotCreateIndex: 67,
  NamespaceNotSharded: 118,
  WriteConflict: 112,
  CannotIndexParallelArrays: 171,
  TransactionTooOld: 225,
  OperationNotSupportedInTransaction: 263,
  FailPointSetFailed: 266,
  ChangeStreamHistoryLost: 286,
  ChangeStreamFatalError: 280,
  InvalidResumeToken: 260,
  NoSuchTransaction: 251,
  TransactionCommitted: 256,
  NotImplemented: 238,
  BSONObjectTooLarge: 10334,
  IDLUnknownField: 40415,
  Location17419: 17419,
  Location40324: 40324,
  Location31254: 31254,
  Location40573: 40573,
  Location40323: 40323,
  Location31025: 31025,
  DuplicateKey: 11000,
} as const;

export type ErrorCodeName = keyof typeof ErrorCodes;

/** codeName for a numeric code (fail points name arbitrary codes; the driver and tests read codeName). */
const CODE_NAMES: Record<number, string> = {
  ...Object.fromEntries(
    Object.entries(ErrorCodes)
      .filter(([name]) => !name.startsWith('Location'))
      .map(([name, code]) => [code, name]),
  ),
  6: 'HostUnreachable',
  7: 'HostNotFound',
  64: 'WriteConcernFailed',
  89: 'NetworkTimeout',
  91: 'ShutdownInProgress',
  133: 'FailedToSatisfyReadPreference',
  134: 'ReadConcernMajorityNotAvailableYet',
  189: 'PrimarySteppedDown',
  234: 'RetryChangeStream',
  262: 'ExceededTimeLimit',
  9001: 'SocketException',
  10107: 'NotWritablePrimary',
  11600: 'InterruptedAtShutdown',
  11601: 'Interrupted',
  11602: 'InterruptedDueToReplStateChange',
  13435: 'NotPrimaryNoSecondaryOk',
  13436: 'NotPrimaryOrSecondary',
};

/**
 * mongod's Interruption category (error_codes.yml): Interrupted, InterruptedAtShutdown,
 * ExceededTimeLimit, MaxTimeMSExpired, CursorKilled, ClientDisconnect,
 * InterruptedDueToReplStateChange, TransactionExceededLifetimeLimitSeconds, ClientMarkedKilled.
 * A write statement failing with one of these fails its whole command (see runBatch).
 */
const INTERRUPTION = new Set([11601, 11600, 262, 50, 237, 279, 11602, 290, 46841]);

export function isInterruption(code: number): boolean {
  return INTERRUPTION.has(code);
}

export function codeName(code: number): string {
  return CODE_NAMES[code] ?? '';
}

/**
 * Ends the command by closing the client's connection without a reply (a `failCommand` fail
 * point with closeConnection, or onPrimaryTransactionalWrite): the client sees a network error.
 */
export class CloseConnection extends Error {
  constructor() {
    super('connection closed by a fail point');
    this.name = 'CloseConnection';
  }
}

/** A command failure with mongod's code and codeName; extra fields are copied into the reply. */
export class CommandError extends Error {
  readonly code: number;
  readonly codeName: string;
  errorLabels: string[];
  readonly extra: Record<string, unknown>;

  constructor(codeName: ErrorCodeName | number, message: string, options: { labels?: string[]; extra?: Record<string, unknown> } = {}) {
    super(message);
    this.name = 'CommandError';
    this.code = typeof codeName === 'number' ? codeName : ErrorCodes[codeName];
    this.codeName = typeof codeName === 'number' ? (CODE_NAMES[codeName] ?? '') : codeName.startsWith('Location') ? '' : codeName;
    this.errorLabels = options.labels ?? [];
    this.extra = options.extra ?? {};
  }

  /** A copy with `labels` added (mongod labels some errors by where they happen). */
  withLabels(labels: string[]): CommandError {
    const copy = new CommandError(this.code, this.message, { labels: [...new Set([...this.errorLabels, ...labels])], extra: this.extra });
    return copy;
  }

  /** The reply document sent for a failed command. */
  toReply(): Record<string, unknown> {
    const reply: Record<string, unknown> = { ok: 0, errmsg: this.message, code: this.code };
    if (this.codeName) reply.codeName = this.codeName;
    Object.assign(reply, this.extra);
    if (this.errorLabels.length > 0) reply.errorLabels = this.errorLabels;
    return reply;
  }

  /** The entry used in a write command's `writeErrors`. */
  toWriteError(index: number): Record<string, unknown> {
    const entry: Record<string, unknown> = { index, code: this.code };
    if (this.codeName) entry.codeName = this.codeName;
    entry.errmsg = this.message;
    Object.assign(entry, this.extra);
    return entry;
  }
}

/** A feature the emulator recognises but does not implement: loud, never a silent wrong answer. */
export function notImplemented(what: string): CommandError {
  return new CommandError('NotImplemented', `${what} is not supported by the Loom MongoDB emulator`);
}

export function badValue(message: string): CommandError {
  return new CommandError('BadValue', message);
}

/** Converts anything thrown while running a command into a CommandError (mingo throws plain Errors). */
export function toCommandError(err: unknown): CommandError {
  if (err instanceof CommandError) return err;
  // A JS runtime error is an emulator bug, not bad input: say so rather than blame the request.
  if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError) {
    return new CommandError('InternalError', `Loom MongoDB emulator internal error: ${err.message}`);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new CommandError('BadValue', message);
}

// The emulator's own errors, for programs that use it, and the signals its parts throw to each
// other; the signals never reach a client as they are (each is caught where it is handled).

/** `appMongo()` was asked for the emulator in production: `MONGODB_URI` must be set there. */
export class MongoUriRequiredError extends Error {
  /** Stable, for programs: `MONGODB_URI_REQUIRED`. */
  readonly code = 'MONGODB_URI_REQUIRED';

  constructor() {
    super(
      'MONGODB_URI is not set and NODE_ENV is production: the in-process emulator keeps nothing and is refused there. ' +
        'Set MONGODB_URI to a MongoDB replica set, e.g. mongodb://db1,db2,db3/?replicaSet=rs0',
    );
    this.name = 'MongoUriRequiredError';
  }
}

/**
 * Internal signal: this update pipeline (or this value) is not one the compiled path decides; the
 * caller runs it through mingo instead.
 */
export class Unhandled extends Error {
  constructor(why?: string) {
    super(why);
    this.name = 'Unhandled';
  }
}

/** Internal signal: a non-transactional write met a document a transaction has locked; retried once `until` settles. */
export class LockWait extends Error {
  constructor(readonly until: Promise<void>) {
    super('document locked by a transaction');
    this.name = 'LockWait';
  }
}

/** Internal signal: a document in a message over 16 MiB + 16 KiB; mongod refuses it before running anything. */
export class OversizedDocument extends Error {
  constructor(readonly size: number) {
    super('oversized BSON document');
    this.name = 'OversizedDocument';
  }
}
