import { MongoClient, type CommandStartedEvent, type CommandSucceededEvent, type Document, type Long } from 'mongodb';

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
 * A MongoClient with the driver's command monitoring on, counting every command it sends by name,
 * and by {@link CommandCategory} given the name of the engine's jobs collection. Both engines are
 * handed this client, so their database load is counted the same way.
 */
export class CommandCounter {
  readonly client: MongoClient;
  private readonly counts = new Map<string, number>();
  private readonly categories = new Map<CommandCategory, number>();
  /** Change stream cursors: their getMores are the stream's. */
  private readonly streamCursors = new Set<string>();
  /** Request ids of change stream aggregates in flight (their reply names the cursor). */
  private readonly openingStreams = new Set<number>();

  constructor(
    uri: string,
    private readonly jobsCollection?: string,
  ) {
    this.client = new MongoClient(uri, { monitorCommands: true });
    this.client.on('commandStarted', (event: CommandStartedEvent) => {
      this.counts.set(event.commandName, (this.counts.get(event.commandName) ?? 0) + 1);
      const category = this.categorize(event);
      this.categories.set(category, (this.categories.get(category) ?? 0) + 1);
    });
    this.client.on('commandSucceeded', (event: CommandSucceededEvent) => {
      if (!this.openingStreams.delete(event.requestId)) return;
      const id = (event.reply as { cursor?: { id?: CursorId } }).cursor?.id;
      if (id !== undefined) this.streamCursors.add(String(id));
    });
  }

  private categorize(event: CommandStartedEvent): CommandCategory {
    const command = event.command as Document;
    if (event.commandName === 'aggregate' && Array.isArray(command.pipeline) && (command.pipeline as Document[])[0]?.$changeStream !== undefined) {
      this.openingStreams.add(event.requestId);
      return 'changeStream';
    }
    if (event.commandName === 'getMore' && this.streamCursors.has(String(command.getMore as CursorId))) return 'changeStream';
    if (
      event.commandName === 'killCursors' &&
      Array.isArray(command.cursors) &&
      (command.cursors as CursorId[]).some((id) => this.streamCursors.has(String(id)))
    )
      return 'changeStream';
    const collection: unknown = event.commandName === 'getMore' ? command.collection : command[event.commandName];
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
