/**
 * MongoEmulator: an in-memory MongoDB server on 127.0.0.1 that the official driver talks to
 * over the wire protocol, as a one-member replica set (default) or a standalone.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Engine } from './engine.js';
import { Dispatcher } from './commands/dispatch.js';
import { commandTable } from './commands/registry.js';
import { WireConnection } from './wire/connection.js';
import { systemClock, type EmulatorClock } from './clock.js';
import { sweepExpired } from './ttl.js';
import { parseSort } from './query/sort.js';
import { explainPlan } from './query/execute.js';
import type { StepDownReport } from './repl-state.js';
import { CommandError } from './errors.js';
import { ShardRouter } from './sharding/router.js';
import { ShardedCluster } from './sharding/cluster.js';
import type { ShardStatsReport } from './sharding/stats.js';

export interface MongoEmulatorOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Run as a one-member replica set (default true, named "rs0"); a string names the set; false runs a standalone. */
  replicaSet?: boolean | string;
  /** Source of time for TTL expiry, $currentDate and change event times. Defaults to the system clock. */
  clock?: EmulatorClock;
  /** How often the TTL monitor runs, in real milliseconds (default 1000; 0 disables the timer). */
  ttlIntervalMs?: number;
  /**
   * Simulate a sharded cluster of this many shards behind a mongos (see the README, "Sharded
   * cluster (simulation)"): `hello` answers as mongos, the URI has no replicaSet, and commands
   * on sharded collections follow mongos's rules and are counted per shard. Default: none.
   */
  shards?: number;
  /** With `shards`: the MongoDB version whose routing rules apply ('7.0' default; '7.1' and later accept single writes without the shard key). */
  version?: string;
}

export class MongoEmulator {
  private ttlTimer?: NodeJS.Timeout;
  private stopped = false;

  private constructor(
    private readonly server: Server,
    private readonly engine: Engine,
    private readonly sockets: Set<Socket>,
    /** The TCP port it listens on (useful with `port: 0`). */
    readonly port: number,
  ) {}

  /** Starts listening on 127.0.0.1; resolves once the server accepts connections. */
  static async start(options: MongoEmulatorOptions = {}): Promise<MongoEmulator> {
    const replicaSet = options.replicaSet === false ? undefined : typeof options.replicaSet === 'string' ? options.replicaSet : 'rs0';
    if (options.shards !== undefined && options.replicaSet === false)
      throw new TypeError('shards cannot be combined with replicaSet: false (the shards of a sharded cluster are replica sets)');
    if (options.version !== undefined && options.shards === undefined)
      throw new TypeError('version applies to the sharded cluster simulation only: give shards too');
    const engine = new Engine({ clock: options.clock ?? systemClock, replicaSet });
    // Validates shards/version before anything listens.
    if (options.shards !== undefined) engine.sharding = new ShardRouter(new ShardedCluster({ shards: options.shards, version: options.version }));
    const dispatcher = new Dispatcher(engine, commandTable);
    let nextConnectionId = 1;
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      const id = nextConnectionId++;
      socket.on('close', () => {
        sockets.delete(socket);
        engine.appNames.delete(id);
      });
      new WireConnection(socket, id, (request) => dispatcher.run(request.db, request.body, id));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const port = (server.address() as AddressInfo).port;
    engine.host = `127.0.0.1:${port}`;
    const emulator = new MongoEmulator(server, engine, sockets, port);
    const interval = options.ttlIntervalMs ?? 1000;
    if (interval > 0) {
      emulator.ttlTimer = setInterval(() => sweepExpired(engine), interval);
      emulator.ttlTimer.unref();
    }
    return emulator;
  }

  /** The connection string, usable as-is with `new MongoClient(uri)`. */
  get uri(): string {
    const base = `mongodb://${this.engine.host}/`;
    // A mongos is addressed without replicaSet (the driver sees a sharded topology).
    return this.engine.replicaSet && !this.engine.sharding ? `${base}?replicaSet=${encodeURIComponent(this.engine.replicaSet)}` : base;
  }

  /** How many times each command was received since start (or the last reset). */
  commandCounts(): Record<string, number> {
    return Object.fromEntries(this.engine.counts);
  }

  resetCommandCounts(): void {
    this.engine.counts.clear();
  }

  /**
   * With `shards`: how many commands (write statements counted one by one) each namespace and
   * each virtual shard received, targeted to one shard or broadcast to several. The same as
   * the admin command `{ loomShardStats: 1 }`. Throws without `shards`.
   */
  shardStats(): ShardStatsReport {
    return this.cluster().stats.report();
  }

  /** Clears the counts {@link shardStats} reports (also `{ loomShardStats: 1, reset: true }`). */
  resetShardStats(): void {
    this.cluster().stats.reset();
  }

  private cluster(): ShardedCluster {
    const cluster = this.engine.sharding?.cluster;
    if (!cluster) throw new TypeError('this emulator does not simulate a sharded cluster: start it with { shards: N }');
    return cluster;
  }

  /** Runs the TTL monitor now (against the emulator's clock); returns how many documents expired. */
  runTtlSweep(): number {
    return sweepExpired(this.engine);
  }

  /**
   * Which plan a query would use: an index name, `OR(...)` of index names, or `COLLSCAN`.
   * For tests that must prove a query is index-backed.
   */
  explainPlan(db: string, collection: string, filter: Record<string, unknown>, sort: Record<string, 1 | -1> = {}): string {
    return explainPlan(this.engine.view(db, collection), filter, parseSort(sort));
  }

  /**
   * Steps down as a replica-set election makes a primary do, for `ms` milliseconds (a real timer;
   * omitted: until {@link stepUp}): `hello` reports no primary, writes answer NotWritablePrimary
   * (10107), reads NotPrimaryNoSecondaryOk (13435), waiting operations are interrupted (11602),
   * open transactions abort and change stream cursors are killed; then it is primary again under a
   * new electionId. `closeConnections` also closes every client connection (as servers before
   * MongoDB 4.2 did, or as a network partition would). Resolves with what it did once primary
   * again. The admin command `{ replSetStepDown: <seconds>, force: true }` does the same.
   * Throws NoReplicationEnabled (code 76) on a standalone.
   */
  stepDown(ms?: number, options: { closeConnections?: boolean } = {}): Promise<StepDownReport> {
    if (!this.engine.replicaSet)
      throw new CommandError(
        'NoReplicationEnabled',
        'stepDown needs replica-set mode: this emulator runs a standalone (replicaSet: false); start it with replicaSet: true',
      );
    const done = this.engine.stepDown(ms);
    if (options.closeConnections) for (const socket of this.sockets) socket.destroy();
    return done;
  }

  /** Ends a step-down now (see {@link stepDown}); a no-op when primary. */
  stepUp(): void {
    this.engine.repl.stepUp();
  }

  /** False while stepped down (see {@link stepDown}); always true for a standalone. */
  get isPrimary(): boolean {
    return this.engine.repl.isPrimary;
  }

  /** Lets the process exit while the emulator listens (connections still open keep it alive). */
  unref(): void {
    this.server.unref();
  }

  /** Stops listening, closes every connection and aborts open transactions. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.ttlTimer);
    this.engine.repl.close();
    this.engine.sessions.abortAll();
    this.engine.cursors.killAll();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}
