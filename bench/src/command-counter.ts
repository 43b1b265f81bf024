import { createRequire } from 'node:module';
import { MongoClient, type Document, type Long, type MongoClientOptions } from 'mongodb';

/** A cursor id as the driver hands it over (a Long from the server, a number or bigint in tests). */
type CursorId = Long | number | bigint;

/** Commands seen by one client, by command name. */
export type CommandCounts = Record<string, number>;

/**
 * What a command was for, by what it addressed:
 * - `job`: a command on the jobs collection (insert, claim, heartbeat, complete, any read of jobs),
 *   what the "commands per job" counts;
 * - `changeStream`: opening a change stream and its `getMore`s (an awaiting getMore is answered when
 *   an event the stream keeps arrives, or after its maxAwaitTimeMS when none does);
 * - `other`: every other collection (paused queues, flow control, ...) and server commands
 *   (handshakes, `endSessions`).
 */
export type CommandCategory = 'job' | 'changeStream' | 'other';

/**
 * A MongoClient whose commands are counted by name, and by {@link CommandCategory} given the name
 * of the engine's jobs collection. Both engines are handed this client, so their database load is
 * counted the same way.
 *
 * Counted where the driver hands a command to a pooled connection (see {@link countPooledCommands}),
 * not with command monitoring: `monitorCommands` builds a started and a succeeded event per command,
 * copying the command and deserialising every reply in full a second time (a claim's reply holds
 * its jobs), work a user's worker does not do and that BullMQ's count (a wrapped `sendCommand`)
 * does not cost it either.
 */
export class CommandCounter {
  readonly client: MongoClient;
  private readonly counts = new Map<string, number>();
  private readonly categories = new Map<CommandCategory, number>();
  /** Change stream cursors: their getMores are the stream's. */
  private readonly streamCursors = new Set<string>();

  constructor(
    uri: string,
    private readonly jobsCollection?: string,
    clientOptions?: MongoClientOptions,
  ) {
    this.client = new MongoClient(uri, clientOptions);
    countPooledCommands(this.client, this);
  }

  /** Counts one command about to be sent; returns what to do with its reply, if anything. */
  sent(command: Document): ((reply: unknown) => void) | undefined {
    const name = Object.keys(command)[0];
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    const opensStream = name === 'aggregate' && Array.isArray(command.pipeline) && (command.pipeline as Document[])[0]?.$changeStream !== undefined;
    const category = opensStream ? 'changeStream' : this.categorize(name, command);
    this.categories.set(category, (this.categories.get(category) ?? 0) + 1);
    return opensStream ? (reply) => this.streamOpened(reply) : undefined;
  }

  private streamOpened(reply: unknown): void {
    const id = cursorIdOf(reply);
    if (id !== undefined) this.streamCursors.add(String(id));
  }

  private categorize(name: string, command: Document): CommandCategory {
    if (name === 'getMore' && this.streamCursors.has(String(command.getMore as CursorId))) return 'changeStream';
    if (name === 'killCursors' && Array.isArray(command.cursors) && (command.cursors as CursorId[]).some((id) => this.streamCursors.has(String(id))))
      return 'changeStream';
    const collection: unknown = name === 'getMore' ? command.collection : command[name];
    return this.jobsCollection !== undefined && collection === this.jobsCollection ? 'job' : 'other';
  }

  /** Counts so far (a copy). */
  snapshot(): CommandCounts {
    return Object.fromEntries(this.counts);
  }

  /** Commands sent since `earlier` was taken, by name (names with none left out). */
  since(earlier: CommandCounts): CommandCounts {
    return countsSince(this.counts, earlier);
  }

  /** Counts so far by category (a copy). */
  categorySnapshot(): CommandCounts {
    return Object.fromEntries(this.categories);
  }

  /** Commands sent since `earlier` (a {@link categorySnapshot}) was taken, by category. */
  categoriesSince(earlier: CommandCounts): Partial<Record<CommandCategory, number>> {
    return countsSince(this.categories, earlier);
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** What a scenario needs of a command counter (MongoDB's driver monitoring, or Redis's, for BullMQ: no categories). */
export type CommandTally = Pick<CommandCounter, 'snapshot' | 'since'> & Partial<Pick<CommandCounter, 'categorySnapshot' | 'categoriesSince'>>;

/** Counts now minus counts `earlier`, by name (names with none left out). */
export function countsSince(now: ReadonlyMap<string, number>, earlier: CommandCounts): CommandCounts {
  const diff: CommandCounts = {};
  for (const [name, n] of now) {
    const d = n - (earlier[name] ?? 0);
    if (d > 0) diff[name] = d;
  }
  return diff;
}

/** Sum of all commands in a count. */
export function totalCommands(counts: CommandCounts): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** The driver's connection pool and pooled connection, as far as the count needs them (driver internals). */
interface PooledConnection {
  command: (ns: unknown, command: Document, options: unknown, responseType: unknown) => Promise<unknown>;
}
interface Pool {
  server?: { topology?: { client?: MongoClient } };
  checkOut: (options: unknown) => Promise<PooledConnection>;
}

/** Counters by the client they count. */
const counters = new WeakMap<MongoClient, CommandCounter>();
/** Connections whose `command` is already wrapped. */
const wrapped = new WeakSet<PooledConnection>();

/**
 * Counts the commands `client` sends through `counter`. Every command the driver sends for an
 * operation (reads, writes, cursors' getMores, `endSessions`) goes out through a connection checked
 * out of a server's pool, so the pool's `checkOut` is wrapped once per process and each connection
 * it hands to a counted client counts its `command`s: the same commands command monitoring reports
 * (handshakes and server monitoring's heartbeats are neither). A cheap count is what a benchmark
 * needs; these are the mongodb driver's internals (6.x and 7.x name them so), so the wrap checks
 * that they are there and says so when they are not.
 */
function countPooledCommands(client: MongoClient, counter: CommandCounter): void {
  counters.set(client, counter);
  const require = createRequire(import.meta.url);
  const { ConnectionPool } = require('mongodb/lib/cmap/connection_pool.js') as { ConnectionPool?: { prototype: Pool & { loomCounted?: true } } };
  const proto = ConnectionPool?.prototype;
  if (typeof proto?.checkOut !== 'function')
    throw new Error('bench: the mongodb driver has no ConnectionPool.prototype.checkOut to count commands at; update command-counter.ts for this driver');
  if (proto.loomCounted) return;
  proto.loomCounted = true;
  const checkOut = proto.checkOut;
  proto.checkOut = async function (this: Pool, options: unknown): Promise<PooledConnection> {
    const connection = await checkOut.call(this, options);
    const owner = this.server?.topology?.client;
    const counted = owner && counters.get(owner);
    if (counted && !wrapped.has(connection)) {
      wrapped.add(connection);
      const command = connection.command;
      connection.command = function (this: PooledConnection, ns, cmd, opts, responseType) {
        const onReply = counted.sent(cmd);
        const reply = command.call(this, ns, cmd, opts, responseType);
        return onReply ? reply.then((r) => (onReply(r), r)) : reply;
      };
    }
    return connection;
  };
}

/** The cursor id of an aggregate's reply: a plain document, or the driver's lazy `CursorResponse`. */
function cursorIdOf(reply: unknown): CursorId | undefined {
  const r = reply as { id?: CursorId; cursor?: { id?: CursorId }; toObject?: () => Document };
  if (r?.cursor?.id !== undefined) return r.cursor.id;
  if (typeof r?.toObject === 'function') return (r.toObject() as { cursor?: { id?: CursorId } }).cursor?.id;
  return undefined;
}
