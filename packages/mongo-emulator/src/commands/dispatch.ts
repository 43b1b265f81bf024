/**
 * Command dispatch: name lookup (unknown -> CommandNotFound 59), field validation (unknown ->
 * 40415, recognised-but-unsupported -> NotImplemented), the `failCommand` fail point, session
 * and transaction resolution, write concern, waiting out a transaction's document lock (bounded
 * by maxTimeMS), and the reply fields mongod adds: writeConcernError, errorLabels and, in
 * replica-set mode, operationTime / $clusterTime.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Long } from 'bson';
import { CloseConnection, CommandError, LockWait, notImplemented, toCommandError } from '../errors.js';
import type { Engine } from '../engine.js';
import { errorLabels } from '../error-labels.js';
import { SessionRegistry, type RetryableWrite, type Transaction } from '../transactions.js';
import { checkWriteConcern, type WriteConcernError } from '../write-concern.js';
import { ChangeStreamSource } from '../change-stream.js';
import { isPlainObject, type Doc } from '../values.js';
import { interruptedByStepDown, refusalOnSecondary, type ReplState } from '../repl-state.js';
import type { CommandContext, CommandSpec, CommandTable } from './context.js';

/**
 * `failCommand`'s `blockConnection`: hold the reply for `ms`. An embedded emulator shares its
 * event loop with the client: when the process stalls across the block's end (a GC pause, a
 * descheduled test worker), the client's socket timeout that fell due first and this block's end
 * fire in the same turn, and the reply, written at once, overtakes the driver's timeout (it
 * defers its cleanup by a timer turn, reading what arrives meanwhile). mongod, a process of its
 * own, is not stalled by its client. After a late wake the reply waits a few milliseconds more,
 * so that timers due before the block's end go first, as they would have.
 */
async function blockConnection(ms: number): Promise<void> {
  const start = performance.now();
  await sleep(ms);
  if (performance.now() - start > ms + 1) await sleep(5);
}

const GENERIC_FIELDS = new Set([
  '$db',
  'lsid',
  'txnNumber',
  'autocommit',
  'startTransaction',
  '$clusterTime',
  '$readPreference',
  'readConcern',
  'writeConcern',
  'maxTimeMS',
  'comment',
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
  '$audit',
  '$client',
]);

const COMMIT_OR_ABORT = new Set(['commitTransaction', 'abortTransaction']);
/** Commands a failCommand fail point never fails (it could not be switched off again). */
const NEVER_FAILED = new Set(['configureFailPoint']);

export class Dispatcher {
  /** Each command's accepted fields as a set, built once (not per command run). */
  private readonly fieldSets = new Map<CommandSpec, Set<string>>();

  constructor(
    private readonly engine: Engine,
    private readonly table: CommandTable,
  ) {}

  /** Runs one command and returns its reply (errors become `ok: 0` replies); CloseConnection propagates. */
  async run(db: string, body: Doc, connectionId: number): Promise<Doc> {
    const { engine } = this;
    const name = Object.keys(body)[0] ?? '';
    const writesBefore = engine.catalog.version;
    let labelOverride: string[] | undefined;
    let writeConcernError: WriteConcernError | Doc | undefined;
    let txn: Transaction | undefined;
    let executing = false;
    let reply: Doc;
    try {
      if (name === '') throw new CommandError('FailedToParse', 'Command document is empty');
      engine.counts.set(name, (engine.counts.get(name) ?? 0) + 1);
      const spec = this.lookup(name, db, body);
      const failure = this.failCommand(
        name,
        db,
        body,
        connectionId,
        (data) => data.closeConnection === true || data.blockConnection === true || data.errorCode !== undefined,
      );
      if (failure) {
        if (Array.isArray(failure.errorLabels)) labelOverride = failure.errorLabels.map(String);
        if (failure.blockConnection === true) await blockConnection(Number(failure.blockTimeMS ?? 0));
        if (failure.closeConnection === true) throw new CloseConnection();
        if (failure.errorCode !== undefined) throw new CommandError(Number(failure.errorCode), "Failing command via 'failCommand' failpoint");
      }
      if (engine.replicaSet && !engine.repl.isPrimary) {
        const refusal = refusalOnSecondary(name, body);
        if (refusal) {
          engine.repl.noteRefused();
          throw refusal;
        }
      }
      this.checkReadConcern(body);
      txn = this.resolveTransaction(name, body, spec);
      if (body.lsid !== undefined) engine.sessions.touch(body.lsid);
      if (txn && !COMMIT_OR_ABORT.has(name) && body.writeConcern !== undefined) {
        throw new CommandError('InvalidOptions', 'Cannot set write concern after starting a transaction.');
      }
      writeConcernError = checkWriteConcern(body.writeConcern, engine.replicaSet !== undefined);
      const ctx = this.context(db, body, name, connectionId, txn, spec);
      // On a simulated sharded cluster: mongos's refusals, and which shards the command reaches.
      const routed = engine.sharding?.route(ctx);
      executing = true;
      reply = await this.execute(spec, ctx);
      routed?.(reply);
      const wceFailure = this.failCommand(name, db, body, connectionId, (data) => data.writeConcernError !== undefined);
      if (wceFailure) {
        writeConcernError = wceFailure.writeConcernError as Doc;
        if (Array.isArray(wceFailure.errorLabels)) labelOverride = wceFailure.errorLabels.map(String);
      }
      if (writeConcernError) reply.writeConcernError = writeConcernError;
      const labels =
        labelOverride ??
        errorLabels({
          commandName: name,
          body,
          writeConcernErrorCode: writeConcernError?.code as number | undefined,
          changeStream: false,
          noWritesPerformed: false,
        });
      if (labels.length > 0) reply.errorLabels = labels;
    } catch (err) {
      if (err instanceof CloseConnection) throw err;
      const error = toCommandError(err);
      // A failed statement ends its transaction, as on mongod (the client must start over).
      if (txn && !COMMIT_OR_ABORT.has(name)) engine.sessions.abort(txn);
      const computed = errorLabels({
        commandName: name,
        body,
        code: error.code,
        // A getMore failed before its cursor was checked out (failCommand) is not known to
        // belong to a change stream, so mongod gives it no ResumableChangeStreamError label.
        changeStream: (executing || name === 'aggregate') && this.isChangeStream(name, body),
        noWritesPerformed: engine.catalog.version === writesBefore,
      });
      error.errorLabels = labelOverride ?? [...new Set([...error.errorLabels, ...computed])];
      reply = error.toReply();
    }
    if (engine.replicaSet) Object.assign(reply, engine.logicalClock.replyFields());
    return reply;
  }

  private lookup(name: string, db: string, body: Doc): CommandSpec {
    const spec: CommandSpec | undefined = Object.hasOwn(this.table, name) ? this.table[name] : undefined;
    if (!spec) throw new CommandError('CommandNotFound', `no such command: '${name}'`);
    if (spec.adminOnly && db !== 'admin') {
      throw new CommandError('Unauthorized', `${name} may only be run against the admin database.`);
    }
    let fields = this.fieldSets.get(spec);
    if (!fields) this.fieldSets.set(spec, (fields = new Set(spec.fields)));
    const keys = Object.keys(body);
    for (let i = 1; i < keys.length; i++) {
      const field = keys[i];
      // Refused options are checked first: a known field must never be accepted and then ignored.
      if (spec.unsupported?.includes(field)) throw notImplemented(`option '${field}' of command '${name}'`);
      if (GENERIC_FIELDS.has(field) || fields.has(field)) continue;
      throw new CommandError('IDLUnknownField', `BSON field '${name}.${field}' is an unknown field.`);
    }
    return spec;
  }

  private context(db: string, body: Doc, name: string, connectionId: number, txn: Transaction | undefined, spec: CommandSpec): CommandContext {
    const { engine } = this;
    const maxTimeMS = typeof body.maxTimeMS === 'number' && body.maxTimeMS > 0 && name !== 'getMore' ? body.maxTimeMS : undefined;
    const deadline = maxTimeMS !== undefined ? Date.now() + maxTimeMS : undefined;
    let retryable: RetryableWrite | undefined;
    if (spec.retryable && body.txnNumber !== undefined && body.autocommit === undefined && engine.replicaSet) {
      retryable = engine.sessions.retryableWrite(body.lsid, Number(body.txnNumber));
    }
    return {
      engine,
      db,
      body,
      name,
      txn,
      sessionKey: body.lsid !== undefined ? SessionRegistry.sessionKey(body.lsid) : undefined,
      connectionId,
      retryable,
      view: (coll) => engine.view(db, coll, txn),
      wait: (until) => waitUntil(until, deadline, engine.repl),
    };
  }

  private async execute(spec: CommandSpec, ctx: CommandContext): Promise<Doc> {
    for (;;) {
      try {
        // A copy: a retryable write's recorded reply must not collect this attempt's additions.
        return { ...(await spec.run(ctx)) };
      } catch (err) {
        if (err instanceof LockWait) {
          await ctx.wait(err.until);
          continue;
        }
        throw err;
      }
    }
  }

  /**
   * Fires the failCommand fail point for this command if it targets it (command name, the
   * connection's appName, the namespace) and `wants` its data: mongod evaluates the pre-command
   * failure (close, block, errorCode) and the writeConcernError as two separate activations.
   */
  private failCommand(name: string, db: string, body: Doc, connectionId: number, wants: (data: Doc) => boolean): Doc | undefined {
    const points = this.engine.failPoints;
    if (!points.armed || NEVER_FAILED.has(name)) return undefined;
    return points.fire('failCommand', (data) => {
      if (!Array.isArray(data.failCommands) || !data.failCommands.includes(name)) return false;
      if (typeof data.appName === 'string' && this.engine.appNames.get(connectionId) !== data.appName) return false;
      if (typeof data.namespace === 'string' && data.namespace !== `${db}.${String(body[name])}`) return false;
      return wants(data);
    });
  }

  /** An aggregate opening a change stream, or a getMore on one (ResumableChangeStreamError). */
  private isChangeStream(name: string, body: Doc): boolean {
    if (name === 'aggregate') {
      const first: unknown = Array.isArray(body.pipeline) ? body.pipeline[0] : undefined;
      return isPlainObject(first) && '$changeStream' in first;
    }
    if (name === 'getMore') {
      const id = body.getMore instanceof Long ? body.getMore.toNumber() : Number(body.getMore);
      return this.engine.cursors.peek(id)?.source instanceof ChangeStreamSource;
    }
    return false;
  }

  private checkReadConcern(body: Doc): void {
    const rc = body.readConcern as Doc | undefined;
    // afterClusterTime is always satisfied: every committed write is visible on the one member.
    if (rc && rc.atClusterTime !== undefined) throw notImplemented('readConcern atClusterTime');
  }

  private resolveTransaction(name: string, body: Doc, spec: CommandSpec): Transaction | undefined {
    if (body.txnNumber === undefined) {
      if (name === 'commitTransaction' || name === 'abortTransaction') {
        throw new CommandError('InvalidOptions', `${name} must be run within a transaction`);
      }
      return undefined;
    }
    if (!this.engine.replicaSet) {
      throw new CommandError('IllegalOperation', 'Transaction numbers are only allowed on a replica set member or mongos');
    }
    const txn = this.engine.sessions.resolve(body, name);
    if (txn && !spec.inTransaction) {
      throw new CommandError('OperationNotSupportedInTransaction', `Cannot run '${name}' in a multi-document transaction.`);
    }
    return txn;
  }
}

/**
 * Awaits `until`, or fails with MaxTimeMSExpired at `deadline` (real time, as maxTimeMS is), or
 * with InterruptedDueToReplStateChange (11602) when the member steps down meanwhile: a waiting
 * operation is one mongod kills on a step-down. It also fails with 11602 if the member is not
 * primary once the wait is over (the operation would otherwise write on a secondary).
 */
async function waitUntil(until: Promise<void>, deadline: number | undefined, repl: ReplState): Promise<void> {
  let left: number | undefined;
  if (deadline !== undefined) {
    left = deadline - Date.now();
    if (left <= 0) throw maxTimeExpired();
  }
  let timer: NodeJS.Timeout | undefined;
  let stopListening: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    if (left !== undefined) timer = setTimeout(() => reject(maxTimeExpired()), left);
    stopListening = repl.onInterrupt(reject);
  });
  try {
    await Promise.race([until, stopped]);
  } finally {
    clearTimeout(timer);
    stopListening?.();
  }
  if (!repl.isPrimary) throw interruptedByStepDown();
}

function maxTimeExpired(): CommandError {
  return new CommandError('MaxTimeMSExpired', 'operation exceeded time limit');
}
