/**
 * The entity map of one unified test: clients (with the command and CMAP events they observe),
 * databases, collections, sessions, change streams and saved results. Fail points set through
 * the map are switched off again when the test ends.
 */
import { MongoClient, ReadPreference, type ClientSession, type Document, type MongoClientOptions } from 'mongodb';

export type Doc = Record<string, unknown>;

const COMMAND_EVENTS: Record<string, string> = {
  commandStartedEvent: 'commandStarted',
  commandSucceededEvent: 'commandSucceeded',
  commandFailedEvent: 'commandFailed',
};

const CMAP_EVENTS: Record<string, string> = {
  poolCreatedEvent: 'connectionPoolCreated',
  poolReadyEvent: 'connectionPoolReady',
  poolClearedEvent: 'connectionPoolCleared',
  poolClosedEvent: 'connectionPoolClosed',
  connectionCreatedEvent: 'connectionCreated',
  connectionReadyEvent: 'connectionReady',
  connectionClosedEvent: 'connectionClosed',
  connectionCheckOutStartedEvent: 'connectionCheckOutStarted',
  connectionCheckOutFailedEvent: 'connectionCheckOutFailed',
  connectionCheckedOutEvent: 'connectionCheckedOut',
  connectionCheckedInEvent: 'connectionCheckedIn',
};

/** Commands whose events the driver redacts (Command Logging and Monitoring spec). */
const SENSITIVE = new Set(['authenticate', 'saslStart', 'saslContinue', 'getnonce', 'createUser', 'updateUser', 'copydbgetnonce', 'copydbsaslstart', 'copydb']);

export interface CapturedEvent {
  /** The unified-format name, e.g. `commandStartedEvent` or `poolClearedEvent`. */
  type: string;
  event: Doc;
}

export class TestClient {
  readonly commandEvents: CapturedEvent[] = [];
  readonly cmapEvents: CapturedEvent[] = [];
  private capturing = true;

  constructor(
    readonly client: MongoClient,
    description: Doc,
  ) {
    const observe = (description.observeEvents as string[] | undefined) ?? [];
    const ignored = new Set<string>([...((description.ignoreCommandMonitoringEvents as string[] | undefined) ?? []), 'configureFailPoint']);
    const sensitiveToo = description.observeSensitiveCommands === true;
    for (const type of observe) {
      if (COMMAND_EVENTS[type]) {
        client.on(COMMAND_EVENTS[type] as 'commandStarted', (e) => {
          const event = e as unknown as Doc & { commandName: string };
          if (!this.capturing || ignored.has(event.commandName)) return;
          if (!sensitiveToo && (SENSITIVE.has(event.commandName) || isRedactedHello(event))) return;
          this.commandEvents.push({ type, event });
        });
      } else if (CMAP_EVENTS[type]) {
        client.on(CMAP_EVENTS[type] as 'connectionPoolCleared', (e) => {
          if (this.capturing) this.cmapEvents.push({ type, event: e as unknown as Doc });
        });
      } else {
        throw new Error(`unsupported observeEvents entry ${type}`);
      }
    }
  }

  stopCapturing(): void {
    this.capturing = false;
  }
}

function isRedactedHello(event: Doc & { commandName: string }): boolean {
  if (!['hello', 'ismaster', 'isMaster'].includes(event.commandName)) return false;
  const body = (event.command ?? event.reply) as Doc | undefined;
  return body !== undefined && Object.keys(body).length === 0;
}

export class Entities {
  private readonly map = new Map<string, unknown>();
  /** Fail points to switch off after the test: [client to use, fail point name]. */
  readonly failPoints: { client: MongoClient; name: string }[] = [];

  constructor(
    private readonly uri: string,
    private readonly clientDefaults: MongoClientOptions,
    /** Called for every client entity made (the runner records server error codes). */
    private readonly onClient: (client: MongoClient) => void = () => undefined,
  ) {}

  /** Stops recording events on every client (before expectations are checked). */
  stopCapturing(): void {
    for (const value of this.map.values()) if (value instanceof TestClient) value.stopCapturing();
  }

  get(id: string): unknown {
    if (!this.map.has(id)) throw new Error(`entity '${id}' does not exist`);
    return this.map.get(id);
  }

  has(id: string): boolean {
    return this.map.has(id);
  }

  set(id: string, value: unknown): void {
    if (this.map.has(id)) throw new Error(`entity '${id}' already exists`);
    this.map.set(id, value);
  }

  testClient(id: string): TestClient {
    const c = this.get(id);
    if (!(c instanceof TestClient)) throw new Error(`entity '${id}' is not a client`);
    return c;
  }

  session(id: string): ClientSession {
    const s = this.get(id) as ClientSession;
    if (!s || typeof (s as { startTransaction?: unknown }).startTransaction !== 'function') throw new Error(`entity '${id}' is not a session`);
    return s;
  }

  /** The `lsid` a session sends, for $$sessionLsid. */
  sessionLsid(id: string): Document {
    const lsid = (this.session(id) as unknown as { id?: Document }).id;
    if (!lsid) throw new Error(`session '${id}' has no server session id`);
    return lsid;
  }

  async create(descriptions: Doc[]): Promise<void> {
    for (const entry of descriptions) {
      const [kind, description] = Object.entries(entry)[0] as [string, Doc];
      const id = description.id as string;
      switch (kind) {
        case 'client':
          this.set(id, await this.createClient(description));
          break;
        case 'database': {
          const client = this.testClient(description.client as string).client;
          this.set(id, client.db(description.databaseName as string, (description.databaseOptions ?? {}) as Document));
          break;
        }
        case 'collection': {
          const db = this.get(description.database as string) as import('mongodb').Db;
          this.set(id, db.collection(description.collectionName as string, (description.collectionOptions ?? {}) as Document));
          break;
        }
        case 'session': {
          const client = this.testClient(description.client as string).client;
          const options = (description.sessionOptions ?? {}) as Document;
          this.set(id, client.startSession(options));
          break;
        }
        default:
          throw new Error(`unsupported entity type ${kind}`);
      }
    }
  }

  private async createClient(description: Doc): Promise<TestClient> {
    const url = new URL(this.uri);
    for (const [k, v] of Object.entries((description.uriOptions ?? {}) as Doc)) url.searchParams.set(k, String(v));
    const options: MongoClientOptions = { ...this.clientDefaults, monitorCommands: true };
    const client = new MongoClient(url.toString(), options);
    const test = new TestClient(client, description);
    this.onClient(client);
    // Connecting selects a server by the client's read preference; a one-member set has no
    // secondary, and no test needs one to exist before its first operation: connect via the primary.
    const clientOptions = client.options as { readPreference: unknown };
    const readPreference = clientOptions.readPreference;
    clientOptions.readPreference = ReadPreference.primary;
    try {
      await client.connect();
    } finally {
      clientOptions.readPreference = readPreference;
    }
    return test;
  }

  /** Ends sessions, closes streams and clients, switches fail points off. */
  async cleanup(): Promise<void> {
    for (const { client, name } of this.failPoints.splice(0)) {
      await client.db('admin').command({ configureFailPoint: name, mode: 'off' }).catch(() => undefined);
    }
    for (const value of this.map.values()) {
      if (value && typeof (value as { close?: unknown }).close === 'function' && !(value instanceof TestClient) && !(value instanceof MongoClient)) {
        const closable = value as { close(): Promise<void>; constructor: { name: string } };
        if (/ChangeStream|Cursor/.test(closable.constructor.name)) await closable.close().catch(() => undefined);
      }
    }
    for (const value of this.map.values()) {
      if (value && typeof (value as ClientSession).endSession === 'function' && typeof (value as ClientSession).startTransaction === 'function') {
        await (value as ClientSession).endSession({ force: true } as never).catch(() => undefined);
      }
    }
    for (const value of this.map.values()) if (value instanceof TestClient) await value.client.close(true).catch(() => undefined);
    this.map.clear();
  }
}
