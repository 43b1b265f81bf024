/**
 * The replica-set member state of a replica-set emulator: PRIMARY, or SECONDARY for a while
 * after a step-down (a `replSetStepDown` command, or `MongoEmulator.stepDown` in tests), as a
 * one-member set is during an election. What mongod does on a step-down, the emulator does at
 * `stepDown`:
 *
 * - in-progress operations that wait (a write waiting for a transaction's lock, a drop waiting
 *   for transactions, an awaiting change stream getMore) are interrupted with
 *   InterruptedDueToReplStateChange (11602); a write batch fails as a whole (see runBatch);
 * - open transactions are aborted (a later statement or commit is NoSuchTransaction);
 * - change stream cursors are killed (their getMore in flight answers 11602 labelled
 *   ResumableChangeStreamError; a later getMore CursorNotFound, on which drivers resume too);
 * - while SECONDARY, writes answer NotWritablePrimary (10107) and reads without a secondary read
 *   preference NotPrimaryNoSecondaryOk (13435), with the labels mongod computes (RetryableWriteError
 *   for retryable writes and commit/abort, TransientTransactionError in a transaction); `hello`
 *   reports `isWritablePrimary: false`, `secondary: true` and no primary;
 * - afterwards it is PRIMARY again under a new term (a higher `electionId`, so drivers accept it).
 *
 * Since MongoDB 4.2 a step-down no longer closes client connections; `closeConnections` (a
 * MongoEmulator.stepDown option) closes them as older servers, or a network partition, would.
 */
import { ObjectId } from 'bson';
import { CommandError } from './errors.js';

/** What a step-down did, reported when the member is primary again. */
export interface StepDownReport {
  /** How long it was not primary, in milliseconds. */
  ms: number;
  /** Commands answered NotWritablePrimary or NotPrimaryNoSecondaryOk while it was secondary. */
  refused: number;
  /** Operations in progress at the step-down that were interrupted (11602). */
  interrupted: number;
  /** Open transactions the step-down aborted. */
  transactionsAborted: number;
  /** Change stream cursors the step-down killed (drivers resume them). */
  changeStreamsInterrupted: number;
}

export function interruptedByStepDown(): CommandError {
  return new CommandError(11602, 'operation was interrupted because the node stepped down (replica set state change)');
}

export class ReplState {
  /** The election term: each time the member becomes primary again it grows, and so does electionId. */
  private term = 1;
  private secondaryUntil?: {
    timer?: NodeJS.Timeout;
    since: number;
    report: StepDownReport;
    resolve: (r: StepDownReport) => void;
    done: Promise<StepDownReport>;
  };
  private readonly interruptListeners = new Set<(err: CommandError) => void>();

  get isPrimary(): boolean {
    return this.secondaryUntil === undefined;
  }

  /** The electionId the primary reports (`7fffffff` and the term, as mongod's protocol version 1 does). */
  get electionId(): ObjectId {
    return new ObjectId(`7fffffff${this.term.toString(16).padStart(16, '0')}`);
  }

  /**
   * Becomes SECONDARY: for `ms` milliseconds (a real timer, as a step-down's seconds are), or
   * until `stepUp` when `ms` is undefined. `interrupt` runs the rest of the step-down (the
   * registries' work) and returns what it aborted. A step-down while already secondary extends
   * the current one. Resolves with the report once primary again.
   */
  stepDown(ms: number | undefined, interrupt: () => { transactionsAborted: number; changeStreamsInterrupted: number }): Promise<StepDownReport> {
    let current = this.secondaryUntil;
    if (!current) {
      let resolve!: (r: StepDownReport) => void;
      const done = new Promise<StepDownReport>((r) => (resolve = r));
      current = { since: Date.now(), report: { ms: 0, refused: 0, interrupted: 0, transactionsAborted: 0, changeStreamsInterrupted: 0 }, resolve, done };
      this.secondaryUntil = current;
      const err = interruptedByStepDown();
      for (const listener of [...this.interruptListeners]) {
        listener(err);
        current.report.interrupted++;
      }
      const aborted = interrupt();
      current.report.transactionsAborted += aborted.transactionsAborted;
      current.report.changeStreamsInterrupted += aborted.changeStreamsInterrupted;
    }
    clearTimeout(current.timer);
    current.timer = undefined;
    if (ms !== undefined) current.timer = setTimeout(() => this.stepUp(), ms);
    return current.done;
  }

  /** Becomes PRIMARY again under a new term (a no-op when primary). */
  stepUp(): void {
    const current = this.secondaryUntil;
    if (!current) return;
    clearTimeout(current.timer);
    this.secondaryUntil = undefined;
    this.term++;
    current.report.ms = Date.now() - current.since;
    current.resolve(current.report);
  }

  /** Counts a command refused while secondary (for the report). */
  noteRefused(): void {
    if (this.secondaryUntil) this.secondaryUntil.report.refused++;
  }

  /**
   * Calls `listener` with the interruption error if a step-down happens before the returned
   * function is called: an operation waiting in the server registers for as long as it waits.
   */
  onInterrupt(listener: (err: CommandError) => void): () => void {
    this.interruptListeners.add(listener);
    return () => this.interruptListeners.delete(listener);
  }

  /** Ends a pending step-down timer (the emulator stops). */
  close(): void {
    clearTimeout(this.secondaryUntil?.timer);
  }
}

/** Commands a secondary answers like a primary: handshake, diagnostics, session and cursor housekeeping. */
const SERVED_BY_SECONDARY = new Set([
  'hello',
  'ismaster',
  'isMaster',
  'ping',
  'buildInfo',
  'buildinfo',
  'serverStatus',
  'hostInfo',
  'whatsmyuri',
  'connectionStatus',
  'getParameter',
  'replSetGetStatus',
  'getCmdLineOpts',
  'endSessions',
  'refreshSessions',
  'killSessions',
  'killAllSessions',
  'killCursors',
  'getMore',
  'configureFailPoint',
  'replSetStepDown',
]);

/** Commands that write (a secondary refuses them with NotWritablePrimary). */
const WRITES = new Set([
  'insert',
  'update',
  'delete',
  'findAndModify',
  'findandmodify',
  'create',
  'drop',
  'dropDatabase',
  'createIndexes',
  'dropIndexes',
  'deleteIndexes',
  'renameCollection',
  'collMod',
  'commitTransaction',
  'abortTransaction',
]);

function writesByAggregate(body: Record<string, unknown>): boolean {
  const pipeline = Array.isArray(body.pipeline) ? body.pipeline : [];
  return pipeline.some((stage) => typeof stage === 'object' && stage !== null && ('$out' in stage || '$merge' in stage));
}

/**
 * The error a SECONDARY answers `name` with, or undefined when it serves it: a write is
 * NotWritablePrimary (10107, "not primary"); a read is served only with a read preference other
 * than primary (the driver sends `$readPreference` then), else NotPrimaryNoSecondaryOk (13435).
 */
export function refusalOnSecondary(name: string, body: Record<string, unknown>): CommandError | undefined {
  if (SERVED_BY_SECONDARY.has(name)) return undefined;
  if (WRITES.has(name) || (name === 'aggregate' && writesByAggregate(body))) return new CommandError(10107, 'not primary');
  const mode = (body.$readPreference as { mode?: unknown } | undefined)?.mode;
  if (mode !== undefined && mode !== 'primary') return undefined;
  return new CommandError(13435, 'not primary and secondaryOk=false');
}
