import { MongoClient, type CommandStartedEvent } from 'mongodb';

/** Commands seen by one client, by command name. */
export type CommandCounts = Record<string, number>;

/**
 * A MongoClient with the driver's command monitoring on, counting every command it sends by name.
 * Both engines are handed this client, so their database load is counted the same way.
 */
export class CommandCounter {
  readonly client: MongoClient;
  private readonly counts = new Map<string, number>();

  constructor(uri: string) {
    this.client = new MongoClient(uri, { monitorCommands: true });
    this.client.on('commandStarted', (event: CommandStartedEvent) => {
      this.counts.set(event.commandName, (this.counts.get(event.commandName) ?? 0) + 1);
    });
  }

  /** Counts so far (a copy). */
  snapshot(): CommandCounts {
    return Object.fromEntries(this.counts);
  }

  /** Commands sent since `earlier` was taken, by name (names with none left out). */
  since(earlier: CommandCounts): CommandCounts {
    return countsSince(this.counts, earlier);
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** What a scenario needs of a command counter (MongoDB's driver monitoring, or Redis's, for BullMQ). */
export type CommandTally = Pick<CommandCounter, 'snapshot' | 'since'>;

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
