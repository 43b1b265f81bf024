import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Container } from 'inversify';
import type { MongoClient } from 'mongodb';
import { Loom, SystemClock, toMs, type Clock, type Logger, type LoomOptions } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { loomDashboard, type LoomDashboard } from '@loom/dashboard';
import type { ShopConfig } from './config.js';
import { createHttpServer } from './http/http-server.js';
import { shopRoutes } from './http/routes.js';
import { CompactLogger } from './infra/compact-logger.js';
import { JobQueue } from './infra/job-queue.js';
import { SANDBOX_MODULE, SHOP_JOBS } from './shop-jobs.js';
import { shopModule } from './shop-module.js';

export interface ShopAppOptions {
  /** The shop's writes and Loom's share this client, so they can share transactions. */
  client: MongoClient;
  config: ShopConfig;
  /** @default the system clock (tests pass a FakeClock) */
  clock?: Clock;
  /** @default a CompactLogger on the console */
  logger?: Logger;
  /** Change bindings before anything is built (tests swap the fakes of the outside world here). */
  overrides?: (container: Container) => void;
  /** How the engine is made. @default Loom.create (tests may pass createTestLoom's) */
  createLoom?: (options: LoomOptions) => Promise<Loom>;
  /**
   * Whether the database outlives this process (false on the in-process emulator): decides what
   * the stop line promises about unfinished work. @default true
   */
  durable?: boolean;
}

/**
 * The composition root: builds the container, the store, Loom and the HTTP server. `start()`
 * starts the workers and listens; `stop()` shuts down gracefully.
 */
export class ShopApp {
  private stopping: Promise<void> | undefined;

  private constructor(
    readonly container: Container,
    readonly loom: Loom,
    readonly store: MongoStore,
    readonly server: Server,
    readonly config: ShopConfig,
    readonly logger: Logger,
    private readonly durable: boolean,
    /** The Loom dashboard, served under `/loom`. */
    readonly dashboard: LoomDashboard,
  ) {}

  static async create(options: ShopAppOptions): Promise<ShopApp> {
    const { client, config } = options;
    const clock = options.clock ?? new SystemClock();
    const logger = options.logger ?? new CompactLogger();
    const store = new MongoStore({
      client,
      database: config.database,
      ...(config.retention ? { retention: config.retention } : {}),
      logger: logger.child({ component: 'mongo-store' }),
    });
    const container = new Container({ defaultScope: 'Singleton' });
    container.load(shopModule({ client, store, config, clock, logger }));
    options.overrides?.(container);
    const loom = await (options.createLoom ?? Loom.create)({
      container,
      store,
      jobs: SHOP_JOBS,
      clock,
      logger,
      concurrency: config.concurrency,
      shutdownGrace: config.shutdownGrace,
      pollInterval: config.pollInterval,
      sandbox: { module: SANDBOX_MODULE, threads: 2 },
    });
    container.get(JobQueue).attach(loom);
    const dashboard = loomDashboard({
      store,
      basePath: '/loom',
      clock,
      logger: logger.child({ component: 'dashboard' }),
      // The shop listens on 127.0.0.1 only, so whoever reaches it sits at this machine. A real app
      // asks its own session here (an admin role); without authorize the dashboard is read-only.
      authorize: (req) => isLoopback(req.socket.remoteAddress),
    });
    return new ShopApp(container, loom, store, createHttpServer(shopRoutes(container), logger, dashboard), config, logger, options.durable ?? true, dashboard);
  }

  /** Starts the workers and the scheduler, then listens on `port` (default: the config's; 0 picks one). Returns the base URL. */
  async start(port = this.config.port): Promise<string> {
    await this.loom.start();
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.url;
  }

  /** Where the dashboard is: `<url>/loom`. */
  get dashboardUrl(): string {
    return `${this.url}/loom`;
  }

  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /**
   * Graceful stop: no new requests, no new claims; running jobs get `shutdownGrace` to finish and
   * the rest are released back to the queue (attempt not counted). On a durable database
   * everything unfinished stays in MongoDB and runs on the next start; the emulator keeps nothing.
   * Safe to call twice.
   */
  stop(reason = 'stop requested'): Promise<void> {
    this.stopping ??= this.shutdown(reason);
    return this.stopping;
  }

  private async shutdown(reason: string): Promise<void> {
    const { inFlight } = await this.loom.stats();
    this.logger.info({ reason, inFlight }, `${reason}: stopping; ${inFlight} job run(s) in flight get up to ${toMs(this.config.shutdownGrace)} ms to finish`);
    // Open dashboard pages hold live-update streams; end them, or the server never closes.
    this.dashboard.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    await this.loom.stop();
    await closed;
    await this.store.close();
    this.logger.info(
      {},
      this.durable
        ? 'stopped: no job lost; anything unfinished is stored and runs on the next start'
        : 'stopped; the in-process emulator keeps nothing, so unfinished jobs end with this process (set MONGODB_URI to a replica set to keep them)',
    );
  }
}

function isLoopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
}
