import {
  MongoError,
  MongoServerError,
  ReadPreference,
  type ClientSession,
  type ConnectionClosedEvent,
  type MongoClient,
  type TransactionOptions,
} from 'mongodb';
import type { StoreLogger } from '../options.js';
import { isSocketError, isTransientMongoError } from './transient-errors.js';

/**
 * How long a server keeps a transaction nobody ends: mongod's `transactionLifetimeLimitSeconds`
 * (60 s by default, the emulator's too). Past it there is nothing left to end.
 */
const SERVER_KEEPS_IT_MS = 60_000;
/** Between two attempts to end a transaction, on top of the driver's own server selection wait. */
const RETRY_MS = 500;
/** Attempts enough to outlast the server's limit: each waits at least RETRY_MS, most a server selection too. */
const ATTEMPTS = SERVER_KEEPS_IT_MS / RETRY_MS;

/**
 * Ends on the server the transactions whose end this process could not deliver.
 *
 * When the connection drops inside a transaction (the network, not the server, failed), the
 * driver's abort fails too and the driver moves on. The server still holds the transaction, and
 * with it every document it wrote, until `transactionLifetimeLimitSeconds` (a minute): a job whose
 * fenced completion was in it cannot be taken over by anyone for that minute (claims set it aside,
 * see held-jobs.ts), and an application's own writes to the documents the handler touched wait for
 * it. Measured through a 4 s outage (reliability-outage.test.ts): the run took 60 s instead of 10.
 *
 * So a transaction that failed in a way that may have left it open on the server is ended here:
 * `killSessions` with its session id (a user may kill sessions of its own; it aborts the session's
 * open transaction, and does nothing when the transaction had ended after all), sent as soon as a
 * server is selectable and retried until the server would have aborted it anyway. A transaction
 * whose commit failed is in doubt: either committed, which the kill leaves alone, or aborted by
 * it; its caller was told it failed, and the job runs again.
 */
export class AbandonedTransactions {
  private closed = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly lostServer: LostServerSigns;

  constructor(
    private readonly client: MongoClient,
    private readonly logger: StoreLogger,
  ) {
    this.lostServer = LostServerSigns.of(client);
  }

  /** Runs `fn` in a transaction on a session of its own; ends the transaction on the server if it may be left open there. */
  run<T>(options: TransactionOptions, fn: (session: ClientSession) => Promise<T>): Promise<T> {
    return this.client.withSession(async (session) => {
      // Whether the driver's last attempt got as far as its commit: a failed commit leaves the
      // outcome in doubt whatever the error says (a socket error the driver does not wrap even
      // surfaces as its own TypeError, `hasErrorLabel is not a function`).
      let committing = false;
      const attempt = async (): Promise<T> => {
        committing = false;
        const result = await fn(session);
        committing = true;
        return result;
      };
      // A callback failing with an error of its own (a handler's, often because the network it
      // needs is gone) makes the driver abort and ignore the abort's failure, as the transactions
      // spec says: nothing in the error tells. This client losing the server meanwhile does, so
      // the transaction is ended then too (at worst one killSessions too many when another
      // operation's connection failed at the same moment).
      const failuresBefore = this.lostServer.count;
      try {
        return await session.withTransaction(attempt, options);
      } catch (err) {
        if (committing || mayBeLeftOpen(err) || this.lostServer.count !== failuresBefore) this.abandon(session, err);
        throw err;
      }
    });
  }

  /**
   * Runs `fn` in a transaction that is aborted whatever it does: a probe that must change nothing
   * (held-jobs.ts). If the abort may not have reached the server, the transaction is ended there
   * as {@link run} does: a probe that wrote would otherwise hold the document it probed.
   */
  aborted<T>(fn: (session: ClientSession) => Promise<T>): Promise<T> {
    return this.client.withSession(async (session) => {
      const failuresBefore = this.lostServer.count;
      let failure: unknown;
      session.startTransaction();
      try {
        return await fn(session);
      } catch (err) {
        failure = err;
        throw err;
      } finally {
        // The driver ignores an abort that failed on the way (see run()); one that throws is ended too.
        let abortFailure: unknown;
        await session.abortTransaction().catch((err: unknown) => void (abortFailure = err));
        if (abortFailure !== undefined || mayBeLeftOpen(failure) || this.lostServer.count !== failuresBefore) this.abandon(session, abortFailure ?? failure);
      }
    });
  }

  /** Stops ending transactions (the store closes; its client may be closing too). */
  close(): void {
    if (!this.closed) this.lostServer.release();
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  /** Ends `session`'s transaction on the server, and keeps the driver from handing the session to another operation. */
  private abandon(session: ClientSession, cause: unknown): void {
    if (!session.id) return;
    // The driver would reuse the session (it discards only those a MongoNetworkError touched),
    // and the kill below would then end the next operation's work instead.
    session.serverSession.isDirty = true;
    this.end(session.id, cause);
  }

  private end(lsid: NonNullable<ClientSession['id']>, cause: unknown): void {
    const session = lsid.id.toString('hex');
    let attempts = 0;
    const attempt = async (): Promise<void> => {
      if (this.closed) return;
      try {
        // The transaction lives on the primary, whatever the client's read preference.
        await this.client.db('admin').command({ killSessions: [lsid] }, { readPreference: ReadPreference.primary });
        this.logger.warn(
          { session, err: cause },
          'a lost connection may have left a transaction open on the server: ended it (killSessions), so it holds none of the documents it wrote',
        );
      } catch (err) {
        if (this.closed) return;
        if (!isTransientMongoError(err) || ++attempts >= ATTEMPTS) {
          this.logger.warn({ session, err }, 'could not end a transaction whose end had not reached the server; the server aborts it within a minute');
          return;
        }
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          void attempt();
        }, RETRY_MS);
        timer.unref();
        this.timers.add(timer);
      }
    };
    void attempt();
  }
}

/**
 * Whether a failed transaction's end may not have reached the server: the failure, or one it
 * wraps, is the client's (a network or server-selection error, a timeout, a socket's own error)
 * rather than an answer of the server's, or the commit's outcome is unknown.
 */
function mayBeLeftOpen(err: unknown): boolean {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof MongoServerError) {
      if (e.hasErrorLabel('UnknownTransactionCommitResult')) return true;
    } else if (e instanceof MongoError || isSocketError(e)) {
      return true;
    }
  }
  return false;
}

/**
 * The signs so far that a client lost the server: a connection closed on an error (a command's
 * socket failed), or a pool cleared (the driver marked a server unknown, after a failed heartbeat
 * too: an abort then finds no server and fails without a connection). One pair of listeners per
 * client, shared by every store on it (a listener per store warned past ten stores on one client).
 */
class LostServerSigns {
  private static readonly byClient = new WeakMap<MongoClient, LostServerSigns>();
  /** How many signs so far: a transaction compares it before and after. */
  count = 0;
  private users = 0;
  private readonly onConnectionClosed = (event: ConnectionClosedEvent): void => {
    if (event.reason === 'error') this.count++;
  };
  private readonly onPoolCleared = (): void => {
    this.count++;
  };

  private constructor(private readonly client: MongoClient) {
    client.on('connectionClosed', this.onConnectionClosed);
    client.on('connectionPoolCleared', this.onPoolCleared);
  }

  /** The signs of `client`, counted for one more user until its {@link release}. */
  static of(client: MongoClient): LostServerSigns {
    let signs = LostServerSigns.byClient.get(client);
    if (!signs) LostServerSigns.byClient.set(client, (signs = new LostServerSigns(client)));
    signs.users++;
    return signs;
  }

  /** One user less; the last one removes the listeners. */
  release(): void {
    if (--this.users > 0) return;
    this.client.off('connectionClosed', this.onConnectionClosed);
    this.client.off('connectionPoolCleared', this.onPoolCleared);
    LostServerSigns.byClient.delete(this.client);
  }
}
